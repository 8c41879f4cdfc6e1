"""Run records (schema mok-run/1): one JSON object per measured or published run.

Records are append-only JSON lines. Readers validate every line and stop at the first bad one,
naming file and line; nothing is skipped silently.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterable

from .errors import MokInputError

SCHEMA = "mok-run/1"
PASSES = ("fwd", "bwd")
PRECISIONS = ("bf16", "fp8", "mxfp8")
SOURCES = ("measured", "published")
KNOBS = ("dispatch", "combine", "minibatch", "comm_sms", "macrobatch", "capacity")

_REQUIRED: dict[str, type | tuple[type, ...]] = {
    "schema": str,
    "id": str,
    "date": str,
    "hardware": dict,
    "software": dict,
    "system": str,
    "model": (str, dict),
    "ep": int,
    "emulated_peers": bool,
    "tokens": int,
    "pass": str,
    "precision": str,
    "config": dict,
    "routing": dict,
    "latency_ms": dict,
    "source": str,
}


def validate_record(rec: Any) -> None:
    """Raise MokInputError naming the first field that breaks the mok-run/1 schema."""
    if not isinstance(rec, dict):
        raise MokInputError("a run record must be a JSON object")
    for key, kind in _REQUIRED.items():
        if key not in rec:
            raise MokInputError(f"missing field {key!r}")
        if not isinstance(rec[key], kind) or (kind is int and isinstance(rec[key], bool)):
            raise MokInputError(f"field {key!r}={rec[key]!r} has the wrong type")
    if rec["schema"] != SCHEMA:
        raise MokInputError(f"schema {rec['schema']!r} is not {SCHEMA!r}")
    if rec["pass"] not in PASSES:
        raise MokInputError(f"pass {rec['pass']!r} is not one of {PASSES}")
    if rec["precision"] not in PRECISIONS:
        raise MokInputError(f"precision {rec['precision']!r} is not one of {PRECISIONS}")
    if rec["source"] not in SOURCES:
        raise MokInputError(f"source {rec['source']!r} is not one of {SOURCES}")
    if rec["ep"] < 1 or rec["tokens"] < 1:
        raise MokInputError(f"ep={rec['ep']} and tokens={rec['tokens']} must be >= 1")
    hw = rec["hardware"]
    if not isinstance(hw.get("preset"), str):
        raise MokInputError("hardware.preset must be a preset name")
    lat = rec["latency_ms"]
    med = lat.get("median")
    if not isinstance(med, (int, float)) or isinstance(med, bool) or not 0 < med < float("inf"):
        raise MokInputError(f"latency_ms.median={med!r} must be a positive number")
    for key in ("p10", "p90"):
        if key in lat and not (isinstance(lat[key], (int, float)) and lat[key] > 0):
            raise MokInputError(f"latency_ms.{key}={lat[key]!r} must be a positive number")
    if "breakdown_ms" in rec and not isinstance(rec["breakdown_ms"], dict):
        raise MokInputError("breakdown_ms must be an object")
    _validate_config(rec["config"])
    routing = rec["routing"]
    if not isinstance(routing.get("kind", "uniform"), str):
        raise MokInputError(f"routing.kind={routing.get('kind')!r} must be a string")
    seed = routing.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise MokInputError(f"routing.seed={seed!r} must be an integer >= 0")


def _validate_config(cfg: dict) -> None:
    """Knobs a record names must have the knobs' types (absent knobs are left to the tuner)."""
    for key in ("dispatch", "combine"):
        if key in cfg and cfg[key] not in ("pull", "push"):
            raise MokInputError(f"config.{key}={cfg[key]!r} must be 'pull' or 'push'")
    for key in ("minibatch", "comm_sms", "macrobatch"):
        v = cfg.get(key, 1)
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise MokInputError(f"config.{key}={v!r} must be an integer >= 1")
    v = cfg.get("capacity", 1.0)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v <= 1:
        raise MokInputError(f"config.capacity={v!r} must be a number in (0, 1]")


def read_records(paths: Iterable[str | os.PathLike]) -> list[dict]:
    """Read and validate every record in the given JSONL files; ids must be unique."""
    out: list[dict] = []
    seen: dict[str, str] = {}
    for path in paths:
        path = Path(path)
        if not path.is_file():
            raise MokInputError(f"{path}: no such run-record file")
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise MokInputError(f"{path}: not UTF-8 text (byte {exc.start}); run records are JSON "
                                f"lines") from None
        if not text.strip():
            raise MokInputError(f"{path}: holds no run records (an empty file)")
        for lineno, line in enumerate(text.split("\n"), 1):
            if not line.strip():
                continue
            where = f"{path}:{lineno}"
            try:
                rec = json.loads(line)
                validate_record(rec)
            except json.JSONDecodeError as exc:
                raise MokInputError(f"{where}: not JSON ({exc.msg})") from None
            except MokInputError as exc:
                raise MokInputError(f"{where}: {exc}") from None
            if rec["id"] in seen:
                raise MokInputError(f"{where}: duplicate id {rec['id']!r} (first in {seen[rec['id']]})")
            seen[rec["id"]] = where
            rec["_file"], rec["_line"] = str(path), lineno
            out.append(rec)
    return out


def append_records(path: str | os.PathLike, records: Iterable[dict]) -> int:
    """Validate and append records to a JSONL file (never rewrites existing lines)."""
    path = Path(path)
    existing = {r["id"] for r in read_records([path])} if path.exists() and path.stat().st_size else set()
    lines = []
    for rec in records:
        validate_record(rec)
        if rec["id"] in existing:
            raise MokInputError(f"{path}: record id {rec['id']!r} already present (append-only)")
        existing.add(rec["id"])
        clean = {k: v for k, v in rec.items() if not k.startswith("_")}
        lines.append(json.dumps(clean, sort_keys=True) + "\n")
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as fh:
        if path.stat().st_size and not _ends_with_newline(path):
            fh.write("\n")  # never glue a record onto a last line that lacks its newline
        fh.write("".join(lines))  # one write: a reader never sees part of the batch
    return len(lines)


def _ends_with_newline(path: Path) -> bool:
    with path.open("rb") as fh:
        fh.seek(-1, os.SEEK_END)
        return fh.read(1) == b"\n"
