"""Run records (schema mok-run/1): one JSON object per measured or published run.

Records are append-only JSON lines. Readers validate every line and stop at the first bad one,
naming file and line; nothing is skipped silently. The second half of this module reads a record
as the model's question: the Scenario it measured and the Config it ran (fitting, validation and
studies all use this one reading).
"""

from __future__ import annotations

import datetime
import difflib
import json
import math
import os
from collections import Counter
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable

from .errors import MokInputError
from .fileio import archive_of, archived, read_json_lines
from .presets import load_hardware, load_model, model_from_shape
from .scenario import KNOB_MAX, KNOBS, MAX_DN_BLOCKS, MAX_SEED, SOURCE_ORDERS, SYSTEMS, Config, Scenario
from .workload import legacy_zipf_table

SCHEMA = "mok-run/1"
PASSES = ("fwd", "bwd")
PRECISIONS = ("bf16", "fp8", "mxfp8")
SOURCES = ("measured", "published")
# plausible times (ms) of one timed pass or step: 0.1 us (the shortest records, micro-flag, are
# ~1 us) to 1,000 s (the longest MoE layer passes are ~100 ms); beyond is a unit or parse error
LATENCY_MS = (1e-4, 1e6)
# tile options that are strings (every other `tiles` value is an integer); a source order is
# named only when not "rank" (record_source_order)
STRING_TILES = ("fp8_kernel", "source_order")
# every tile option a MoK or mok-gemm record may name: the forward's (mok_kernels.bench
# forward_tiles), the backward's (mok_kernels.backward.BackwardTiles), the Gluon FP8 pass's
# (gluon_fp8 MoKGluon.tiles) and the earlier kernel variants' in committed records. A name outside
# it (a misspelling) would be read as that option's default and scored as the wrong kernel.
TILE_KEYS = frozenset((
    "block_m", "bn_gu", "bn_dn", "block_k", "num_warps", "num_stages", "group_m", "tma_a",
    "list_lag", "source_order", "split_dn", "dn_blocks", "zero_shared_slot", "fp8_kernel",
    "copy_rows", "w_stages", "w_ws",
    "bn_a", "bn_x", "bk_x", "bw", "bw_h", "bk_rows", "w_flat", "a_fuse_gu", "saved_gu", "w_direct",
    "w_bf16", "w_tma", "a_epi", "diag",
    "gluon_join", "gluon_ys", "gluon_home", "gluon_cu", "gluon_qv"))
_RANGE = f"[{LATENCY_MS[0]:g}, {LATENCY_MS[1]:g}]"
# `gpu_state` (README "Contract extensions"): the GPU under the record's timed iterations, as
# nvidia-smi reads it (mok_kernels.bench.time_events). Its numbers, each present only where
# the GPU reported it: SM clock and the card's maximum (MHz), power draw and limit (W).
GPU_STATE_NUMBERS = ("sm_mhz", "sm_max_mhz", "power_w", "power_limit_w")
# ... and why the clock was held (nvml.h's clocks event reasons, by bit); "other" for a bit not
# named here. sw_power_cap is the one that slows a long GEMM (docs/calibration.md "Session 67").
THROTTLE_REASONS = {0x1: "gpu_idle", 0x2: "applications_clocks_setting", 0x4: "sw_power_cap",
                    0x8: "hw_slowdown", 0x10: "sync_boost", 0x20: "sw_thermal_slowdown",
                    0x40: "hw_thermal_slowdown", 0x80: "hw_power_brake_slowdown",
                    0x100: "display_clock_setting"}
# the reasons that mean the SMs ran below the clock they would otherwise run at under load
SLOWDOWN_REASONS = ("sw_power_cap", "hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown",
                    "hw_power_brake_slowdown")

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


# the optional fields readers act on (README "Contract extensions"); another field is kept
# unread, unless its name is a near miss of one of these or of a required field (a misspelled
# `tiles` would score the record as the default kernel)
OPTIONAL_FIELDS = ("breakdown_ms", "tiles", "rel_err_vs_fp32", "rank_ms", "auto", "metrics",
                   "measurement", "value", "diagnostic", "note", "gpu_state")
_FIELDS = (*_REQUIRED, *OPTIONAL_FIELDS)


def validate_record(rec: Any) -> None:
    """Raise MokInputError naming the first field that breaks the mok-run/1 schema."""
    if not isinstance(rec, dict):
        raise MokInputError("a run record must be a JSON object")
    for key in rec:
        near = key not in _FIELDS and difflib.get_close_matches(key, _FIELDS, n=1, cutoff=0.8)
        if near:
            raise MokInputError(f"field {key!r} is not a run-record field; {near[0]!r} is (a "
                                f"misspelled field would be read as absent)")
    for key, kind in _REQUIRED.items():
        if key not in rec:
            raise MokInputError(f"missing field {key!r}")
        if not isinstance(rec[key], kind) or (kind is int and isinstance(rec[key], bool)):
            raise MokInputError(f"field {key!r}={rec[key]!r} has the wrong type")
    if rec["schema"] != SCHEMA:
        raise MokInputError(f"schema {rec['schema']!r} is not {SCHEMA!r}")
    if not rec["id"].strip():
        raise MokInputError("id '' must name the record")
    if any(c < " " or c == "\x7f" for c in rec["id"]):
        raise MokInputError(f"id {rec['id']!r} must hold no control characters (a line break "
                            f"would split the one-line reports that name it)")
    try:
        made = datetime.datetime.fromisoformat(rec["date"])
    except ValueError:
        raise MokInputError(f"date {rec['date']!r} must be an ISO 8601 date and time") from None
    if made.tzinfo is None:             # records without a zone were written in UTC
        made = made.replace(tzinfo=datetime.timezone.utc)
    if made > datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=1):
        raise MokInputError(f"date {rec['date']!r} is in the future: a run is dated when it was "
                            f"measured (registered predictions meet the runs made after them)")
    if rec["pass"] not in PASSES:
        raise MokInputError(f"pass {rec['pass']!r} is not one of {PASSES}")
    if rec["precision"] not in PRECISIONS:
        raise MokInputError(f"precision {rec['precision']!r} is not one of {PRECISIONS}")
    if rec["source"] not in SOURCES:
        raise MokInputError(f"source {rec['source']!r} is not one of {SOURCES}")
    if rec["ep"] < 1 or rec["tokens"] < 1:
        raise MokInputError(f"ep={rec['ep']} and tokens={rec['tokens']} must be >= 1")
    hw = rec["hardware"]
    preset = hw.get("preset")
    if not isinstance(preset, str) or not preset or preset != preset.strip():
        raise MokInputError(f"hardware.preset={preset!r} must be a preset name (not blank, no "
                            f"surrounding spaces: such a record meets no registration or fit)")
    for key in ("gpus", "sms"):
        if key in hw and (isinstance(hw[key], bool) or not isinstance(hw[key], int) or hw[key] < 1):
            raise MokInputError(f"hardware.{key}={hw[key]!r} must be an integer >= 1")
    lat = rec["latency_ms"]
    med = lat.get("median")
    for key in ("median", "p10", "p90"):
        v = lat.get(key)
        if (key == "median" or key in lat) and not _time(v):
            raise MokInputError(f"latency_ms.{key}={v!r} must be a time in {_RANGE} ms")
    if not lat.get("p10", med) <= med <= lat.get("p90", med):
        raise MokInputError(f"latency_ms p10={lat.get('p10')!r}, median={med!r}, "
                            f"p90={lat.get('p90')!r} must be in that order")
    if "n" in lat and (isinstance(lat["n"], bool) or not isinstance(lat["n"], int) or lat["n"] < 1):
        raise MokInputError(f"latency_ms.n={lat['n']!r} must be a count >= 1")
    if "samples" in lat and not _times(lat["samples"]):
        raise MokInputError(f"latency_ms.samples={lat['samples']!r} must be a list of times in "
                            f"{_RANGE} ms")
    if "rank_ms" in rec and not (isinstance(rec["rank_ms"], list) and rec["rank_ms"]
                                 and all(_times(r) for r in rec["rank_ms"])):
        raise MokInputError(f"rank_ms={rec['rank_ms']!r} must be a list (one per rank) of lists of "
                            f"times in {_RANGE} ms")
    if "diagnostic" in rec and not isinstance(rec["diagnostic"], bool):
        raise MokInputError(f"diagnostic={rec['diagnostic']!r} must be true or false")
    if "note" in rec and not isinstance(rec["note"], str):
        raise MokInputError(f"note={rec['note']!r} must be a string")
    if "rel_err_vs_fp32" in rec:
        err = rec["rel_err_vs_fp32"]
        if not all(_number(e) and e >= 0 for e in (err if isinstance(err, list) and err else [err])):
            raise MokInputError(f"rel_err_vs_fp32={err!r} must be a number >= 0 or a list of them "
                                f"(one per rank)")
    for key in ("value", "auto"):
        if key in rec and not isinstance(rec[key], dict):
            raise MokInputError(f"{key}={rec[key]!r} must be an object")
    if "breakdown_ms" in rec:
        parts = rec["breakdown_ms"]
        if not isinstance(parts, dict) or any(not (_number(v) and 0 <= v <= LATENCY_MS[1])
                                              for v in parts.values()):
            raise MokInputError(f"breakdown_ms={parts!r} must be an object of times in "
                                f"[0, {LATENCY_MS[1]:g}] ms")
    if "tiles" in rec:
        tiles = rec["tiles"]
        if not isinstance(tiles, dict):
            raise MokInputError(f"tiles={tiles!r} must be an object of tile options "
                                f"(integers; fp8_kernel and source_order strings)")
        for k, v in tiles.items():
            if k not in TILE_KEYS:
                raise MokInputError(f"tiles.{k}={v!r} is not a tile option of the kernels "
                                    f"(records.TILE_KEYS; a misspelled option would be scored as "
                                    f"its default)")
            if isinstance(v, bool) or not isinstance(v, str if k in STRING_TILES else int):
                raise MokInputError(f"tiles.{k}={v!r} must be "
                                    + ("a string" if k in STRING_TILES else "an integer"))
        blocks = tiles.get("dn_blocks", 1)
        if not 1 <= blocks <= MAX_DN_BLOCKS:     # 0 would read as the layer's choice
            raise MokInputError(f"tiles.dn_blocks={blocks!r} must be an integer from 1 to "
                                f"{MAX_DN_BLOCKS} (down column blocks an item walked)")
        if tiles.get("source_order", "rank") not in SOURCE_ORDERS:
            raise MokInputError(f"tiles.source_order={tiles['source_order']!r} must be one of "
                                f"{', '.join(SOURCE_ORDERS)}")
    if "gpu_state" in rec:
        _validate_gpu_state(rec["gpu_state"])
    if rec["system"] in LAYER_SYSTEMS:
        _validate_layer_run(rec)
    _validate_config(rec["config"])
    routing = rec["routing"]
    if not isinstance(routing.get("kind", "uniform"), str):
        raise MokInputError(f"routing.kind={routing.get('kind')!r} must be a string")
    seed = routing.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
        raise MokInputError(f"routing.seed={seed!r} must be an integer from 0 to {MAX_SEED}")
    _validate_routing_arg(routing)


# systems whose records time an MoE layer pass or its GEMMs: an explicit "model" shape of theirs
# is read as a layer, so it names every field a model needs (presets.model_from_shape). The
# others (microbenchmarks: micro-*, the published deepep / hybridep dispatch and combine rates)
# name only the dimensions they moved, e.g. {"hidden": 7168}, and no reader makes a layer of it.
LAYER_SYSTEMS = (*SYSTEMS, "mok-gemm", "gemm-only", "torch-grouped", "torch-autograd")


# a routing's parameter: (keys that may hold it, highest value) per kind (routing_spec reads them)
_ROUTING_ARGS = {"zipf": (("arg", "s"), 10.0), "hot": (("arg", "fraction"), 1.0)}
# every key a routing object of each kind may hold besides kind and seed (routing_spec,
# record_zipf_order and the hot draw read them); any other is a misspelling, refused
_ROUTING_KEYS = {"uniform": (), "onehot": (), "zipf": ("arg", "s", "order"),
                 "hot": ("arg", "fraction", "draw"), "file": ("arg", "path")}


def _validate_layer_run(rec: dict) -> None:
    """A layer's record names only the tuner's knobs in its config (a misspelled knob would be
    left to the tuner and scored at its pick) and says truly whether its peers were emulated:
    one GPU per rank is real (hardware.gpus >= ep), fewer emulate the others in local HBM;
    published runs are real; an explicit shape is complete and valid, as a model file is."""
    if isinstance(rec["model"], dict):
        _model(model_key(rec))
    unknown = sorted(set(rec["config"]) - set(KNOBS))
    if unknown:
        raise MokInputError(f"config.{unknown[0]} is not a knob of a layer's run (one of "
                            f"{', '.join(KNOBS)})")
    gpus = rec["hardware"].get("gpus")
    if rec["source"] == "published" and rec["emulated_peers"]:
        raise MokInputError("emulated_peers=true in a published record: published runs are on "
                            "real GPUs")
    if gpus is not None and rec["emulated_peers"] != (rec["ep"] > gpus):
        raise MokInputError(f"emulated_peers={str(rec['emulated_peers']).lower()} with ep="
                            f"{rec['ep']} on hardware.gpus={gpus}: peers are emulated exactly "
                            f"when ep > gpus")


def _validate_routing_arg(routing: dict) -> None:
    """A zipf or hot routing names its number (zipf's exponent in (0, 10], hot's share in
    (0, 1]) and a file routing its path; else the record could not be reproduced, and would be
    left out under the wrong reason."""
    kind = routing.get("kind", "uniform")
    allowed = ("kind", "seed", *_ROUTING_KEYS.get(kind, ()))
    unknown = sorted(set(routing) - set(allowed))
    if kind in _ROUTING_KEYS and unknown:
        raise MokInputError(f"routing.{unknown[0]} is not a key of a {kind} routing (its keys: "
                            f"{', '.join(allowed)})")
    arg = routing.get("arg")          # part of a run's key (calibration.registered): hashable
    if arg is not None and not (_number(arg) or isinstance(arg, str)):
        raise MokInputError(f"routing.arg={arg!r} must be a number or a routing file's path")
    if kind == "file":
        path = routing.get("arg", routing.get("path"))
        if not isinstance(path, str) or not path.strip():
            raise MokInputError(f"routing file: arg (or path)={path!r} must name the routing file")
    if kind not in _ROUTING_ARGS:
        return
    keys, high = _ROUTING_ARGS[kind]
    key = next((k for k in keys if k in routing), keys[0])
    v = routing.get(key)
    if not (_number(v) and 0 < v <= high):
        raise MokInputError(f"routing {kind}: {key}={v!r} must be a number in (0, {high:g}]")


def _number(v) -> bool:
    """A finite JSON number (not a boolean)."""
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _time(v) -> bool:
    """A time within LATENCY_MS (ms)."""
    return _number(v) and LATENCY_MS[0] <= v <= LATENCY_MS[1]


def _times(v) -> bool:
    """A non-empty list of times within LATENCY_MS."""
    return isinstance(v, list) and bool(v) and all(_time(t) for t in v)


def _validate_gpu_state(state) -> None:
    """gpu_state: an object of GPU_STATE_NUMBERS (numbers >= 0) and `throttle`, a list of
    THROTTLE_REASONS names or "other"; nothing else (a misspelled key would read as absent)."""
    if not isinstance(state, dict) or not state:
        raise MokInputError(f"gpu_state={state!r} must be a non-empty object")
    reasons = (*THROTTLE_REASONS.values(), "other")
    for k, v in state.items():
        if k == "throttle":
            if not (isinstance(v, list) and all(r in reasons for r in v)):
                raise MokInputError(f"gpu_state.throttle={v!r} must be a list of "
                                    f"{', '.join(reasons)}")
        elif k not in GPU_STATE_NUMBERS:
            raise MokInputError(f"gpu_state.{k}={v!r} is not a gpu_state field (one of "
                                f"{', '.join(GPU_STATE_NUMBERS)}, throttle)")
        elif not (_number(v) and v >= 0):
            raise MokInputError(f"gpu_state.{k}={v!r} must be a number >= 0")


# a clock at or above this share of the card's maximum is not held, whatever the reasons say: the
# H200's software power cap bit was set on 594 of 1,175 records of session 68, 353 of them at
# 98-100 % of the maximum SM clock (docs/calibration.md "Session 68")
HELD_BELOW = 0.98
# what `slowed` counts, as the notes of mok validate and calibration.registered say it
SLOWED_WHY = (f"gpu_state names a power or thermal cap and an SM clock under "
              f"{100 * HELD_BELOW:.0f}% of its maximum")


def slowed(rec: dict) -> bool:
    """Whether the record's gpu_state says the SMs ran held below their clock: a slowdown reason
    (SLOWDOWN_REASONS) and, where both clocks were read, an SM clock under HELD_BELOW of the
    maximum."""
    state = rec.get("gpu_state")
    if not isinstance(state, dict) or not any(r in SLOWDOWN_REASONS for r in state.get("throttle", ())):
        return False
    sm, top = state.get("sm_mhz"), state.get("sm_max_mhz")
    return sm is None or not top or sm < HELD_BELOW * top


def _validate_config(cfg: dict) -> None:
    """Knobs a record names must have the knobs' types (absent knobs are left to the tuner)."""
    for key in ("dispatch", "combine"):
        if key in cfg and cfg[key] not in ("pull", "push"):
            raise MokInputError(f"config.{key}={cfg[key]!r} must be 'pull' or 'push'")
    for key in ("minibatch", "comm_sms", "macrobatch"):
        v = cfg.get(key, 1)
        if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= KNOB_MAX:
            raise MokInputError(f"config.{key}={v!r} must be an integer in [1, {KNOB_MAX}]")
    v = cfg.get("capacity", 1.0)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v <= 1:
        raise MokInputError(f"config.capacity={v!r} must be a number in (0, 1]")


def record_files(directory: str | os.PathLike, pattern: str = "*.jsonl") -> list[Path]:
    """The record files in `directory` that `pattern` (a glob ending in .jsonl, e.g.
    "bench_*.jsonl"; "**/*.jsonl" for every folder below) names, each as it lies: NAME.jsonl or
    its archive NAME.jsonl.gz; sorted. A file lying both ways is refused (its records twice)."""
    if not pattern.endswith(".jsonl"):
        raise ValueError(f"record_files: pattern {pattern!r} must end in .jsonl")
    d = Path(directory)
    plain, packed = set(d.glob(pattern)), set(d.glob(pattern + ".gz"))
    both = sorted(p for p in plain if archive_of(p) in packed)
    if both:
        raise MokInputError(f"{both[0]} and {both[0].name}.gz: one record file both plain and "
                            f"archived (its records twice); remove one")
    return sorted(plain | packed)


def read_records(paths: Iterable[str | os.PathLike]) -> list[dict]:
    """Read and validate every record in the given JSONL files (NAME.jsonl, or NAME.jsonl.gz
    archived); ids must be unique."""
    out: list[dict] = []
    seen: dict[str, str] = {}
    named: dict[str, str] = {}
    for path in paths:
        real = os.path.realpath(path)
        if real in named:
            raise MokInputError(f"run-record file {str(path)!r} is named twice (first as "
                                f"{named[real]!r}): name each file once")
        named[real] = str(path)
        for where, lineno, rec in read_json_lines(path, "run-record", "run records", validate_record):
            if rec["id"] in seen:
                raise MokInputError(f"{where}: duplicate id {rec['id']!r} (first in {seen[rec['id']]})")
            seen[rec["id"]] = where
            rec["_file"], rec["_line"] = str(Path(path)), lineno
            out.append(rec)
    return out


def shared_record(first: list[dict], second: list[dict]) -> tuple[dict, dict] | None:
    """The first record of `second` whose id is also in `first`, with its twin there (None where
    the two sets share none): one measurement given as two (fitted and held out, a run and its
    re-run)."""
    ids = {r["id"]: r for r in first}
    again = next((r for r in second if r["id"] in ids), None)
    return None if again is None else (again, ids[again["id"]])


def in_id_order(records: Iterable[dict]) -> list[dict]:
    """The records sorted by id (unique, read_records): the one order a tool that fits,
    samples or breaks ties reads them in, so the same records named in another file order, or
    in another line order, give the same numbers."""
    return sorted(records, key=lambda r: r["id"])


def append_records(path: str | os.PathLike, records: Iterable[dict]) -> int:
    """Validate and append records to a JSONL file (never rewrites existing lines); an archived
    file (.jsonl.gz) is read-only."""
    if archived(path):
        raise MokInputError(f"{path}: an archived record file (.gz) is read-only; append the "
                            f"records to a new .jsonl file")
    path = Path(path)
    existing = {r["id"] for r in read_records([path])} if path.exists() and path.stat().st_size else set()
    lines = []
    for rec in records:
        validate_record(rec)
        if rec["id"] in existing:
            raise MokInputError(f"{path}: record id {rec['id']!r} already present (append-only)")
        existing.add(rec["id"])
        clean = {k: v for k, v in rec.items() if not k.startswith("_")}
        try:
            lines.append(json.dumps(clean, sort_keys=True, allow_nan=False) + "\n")
        except ValueError:   # a NaN or infinity in a field validate_record does not read
            raise MokInputError(f"{path}: record {rec['id']!r} holds NaN or infinity, which JSON "
                                f"cannot carry (readers refuse it); nothing appended") from None
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


# ---- a record as the model's question: Scenario and Config ----

def routing_spec(rec: dict) -> str:
    """The model's --routing string for a record's routing object.

    "arg" is the model's own parameter. Records written by `mok bench` name the kernel's
    parameter instead: {"kind": "zipf", "s": S} (same meaning) or {"kind": "hot", "fraction": F}
    / {"kind": "onehot"}, where F is the share of tokens whose first route goes to expert 0; the
    model's hot:X is expert 0's share of all routes, so X = F / top_k.
    """
    routing = rec["routing"]
    kind = routing.get("kind", "uniform")
    if kind == "uniform":
        return "uniform"
    if kind == "zipf":
        return f"zipf:{routing.get('arg', routing.get('s'))}"
    if kind in ("hot", "onehot"):
        if "arg" in routing:
            return f"hot:{routing['arg']}"
        frac = 1.0 if kind == "onehot" else float(routing.get("fraction", 0.0))
        top_k = _model(model_key(rec)).top_k
        return f"hot:{frac / top_k:.6g}"
    if kind == "file":
        return str(routing.get("arg", routing.get("path")))
    raise MokInputError(f"routing kind {kind!r} is not one of uniform, zipf, hot, onehot, file")


def record_model(arg: str) -> str | dict:
    """A record's "model" for a --model argument: the preset's name, or for a TOML file the
    shape it holds as a dict (every MoEModel field), so the record stands without the file."""
    import dataclasses

    from .presets import MODEL_ALIASES, model_names
    if arg in model_names() or arg in MODEL_ALIASES:
        return arg
    return dataclasses.asdict(load_model(arg))


def model_key(rec: dict) -> str:
    """A record's (or registration's) model as one hashable string: the preset name, or its shape
    dict as sorted JSON."""
    m = rec["model"]
    return json.dumps(m, sort_keys=True) if isinstance(m, dict) else m


@lru_cache(maxsize=256)
def _model(key: str):
    if key.startswith("{"):
        return model_from_shape(json.loads(key))
    return load_model(key)


@lru_cache(maxsize=1024)
def workload_scenario(hw: str, model: str, ep: int, tokens: int, pass_: str, precision: str,
                      routing: str, seed: int, zipf_order: str = "model",
                      zero_shared_slot: bool = False, split_dn: int = 0, dn_blocks: int = 0,
                      list_lag: int = 1, bwd_tiles: str = "recompute", copy_loop: str = "shares",
                      fp8_kernel: str = "triton") -> Scenario:
    """The Scenario of a workload key (see workload_key); cached, records share it."""
    return Scenario(load_hardware(hw), _model(model), ep, tokens, pass_, precision, routing, seed,
                    zipf_order, zero_shared_slot, split_dn, list_lag, fp8_kernel,
                    bwd_tiles=bwd_tiles, copy_loop=copy_loop, dn_blocks=dn_blocks)


def workload_key(rec: dict) -> tuple:
    """What a record measured, without the knobs: records with equal keys share a Scenario.
    The last eight elements: the zipf popularity order (record_zipf_order; "model" for the
    others), whether the record's kernel ran a zero shared expert (record_zero_shared_slot),
    the K slices of its down GEMM and the column blocks of its down items where they are not
    today's choice (record_split_dn, record_dn_blocks), its work list's lag (record_list_lag),
    its backward tiles (record_bwd_tiles), its comm copy loop (record_copy_loop) and its FP8
    forward kernel (record_fp8_kernel, last)."""
    return (rec["hardware"]["preset"], model_key(rec), rec["ep"], rec["tokens"], rec["pass"],
            rec["precision"], routing_spec(rec), int(rec["routing"].get("seed", 0)),
            record_zipf_order(rec) or "model", record_zero_shared_slot(rec), record_split_dn(rec),
            record_dn_blocks(rec), record_list_lag(rec), record_bwd_tiles(rec), record_copy_loop(rec),
            record_fp8_kernel(rec))


# our megakernel's systems: the MoE layer pass and its GEMM phases alone
KERNEL_SYSTEMS = ("mok", "mok-gemm")


def record_zero_shared_slot(rec: dict) -> bool:
    """Whether a measured forward of our megakernel (mok, mok-gemm) for a model without a shared
    expert also ran a zero shared expert of the routed width over its home tokens: every such
    record made before the fix of 2026-12-01, whose `tiles` do not say zero_shared_slot 0
    (mok_kernels/bench.py make_record)."""
    if (rec["system"] not in KERNEL_SYSTEMS or rec["pass"] != "fwd"
            or rec.get("source") != "measured" or _model(model_key(rec)).shared_experts):
        return False
    tiles = rec.get("tiles")
    return not (isinstance(tiles, dict) and tiles.get("zero_shared_slot") == 0)


def record_split_dn(rec: dict) -> int:
    """K slices of the down GEMM that a measured forward of our megakernel (mok, mok-gemm) ran,
    where they differ from what MoKLayer picks for its shape today (default_split_dn), else 0
    (the layer's choice). Records name split_dn when it is above 1 (mok_kernels/bench.py
    forward_tiles), so one without it ran 1: every record made before 2026-12-01 16:10 UTC,
    when the split became the shape's."""
    return _ran_unless_todays(rec, "split_dn", default_split_dn)


def record_dn_blocks(rec: dict) -> int:
    """Down column blocks a work item of a measured forward of our megakernel (mok, mok-gemm)
    walked, where they differ from what MoKLayer picks for its shape today (default_dn_blocks),
    else 0 (the layer's choice). Records name dn_blocks when it is above 1 (mok_kernels/bench.py
    forward_tiles), so one without it ran 1: every record made before 2026-12-04 15:18 UTC
    (81c48d4), when the blocks became the shape's."""
    return _ran_unless_todays(rec, "dn_blocks", default_dn_blocks)


def _ran_unless_todays(rec: dict, option: str, todays) -> int:
    """The tile option a measured forward of our megakernel ran (its `tiles` name it when above
    1), or 0 where that is todays(rec), the layer's choice for the record's shape today, and for
    every other record."""
    if (rec["system"] not in KERNEL_SYSTEMS or rec["pass"] != "fwd"
            or rec.get("source") != "measured"):
        return 0
    tiles = rec.get("tiles") if isinstance(rec.get("tiles"), dict) else {}
    ran = int(tiles.get(option, 1))
    return 0 if ran == todays(rec) else ran


def record_list_lag(rec: dict) -> int:
    """The work list's lag a measured forward of our megakernel ran (mok_kernels KernelConfig
    list_lag; its `tiles` name it when not 1), else 1."""
    tiles = rec.get("tiles") if isinstance(rec.get("tiles"), dict) else {}
    if rec["system"] not in KERNEL_SYSTEMS or rec["pass"] != "fwd":
        return 1
    return int(tiles.get("list_lag", 1))


# the first run of our megakernel whose comm copies load their indices ahead (gather_chunks,
# mok_kernels/NOTES.md "Session 39"): every forward measured before it ran the serial loop
COPY_AHEAD_SINCE = datetime.datetime(2026, 12, 4, 0, 50, tzinfo=datetime.timezone.utc)
# the first run of our megakernel whose row copies keep two column steps' loads in flight
# (copy_rows, mok_kernels/NOTES.md "Session 40"; its A/B probe ended at 08:58 that day)
COPY_PIPE_SINCE = datetime.datetime(2026, 12, 4, 9, 0, tzinfo=datetime.timezone.utc)
# the first kernel whose emulated push lanes copy their source's run of each row tile (commit
# c676f75, 12:34 that day; mok_kernels/NOTES.md "Session 41"; its A/B probe ran before, with the
# runs behind a flag)
COPY_RUNS_SINCE = datetime.datetime(2026, 12, 4, 12, 34, tzinfo=datetime.timezone.utc)
# the first kernel whose push lanes split their pair's rows evenly over every row tile
# (KernelConfig.push_loop 'shares' made the default: commit of 10:29:56 that day;
# mok_kernels/NOTES.md "Session 63"; its A/B ran before, 'shares' behind the knob)
COPY_SHARES_SINCE = datetime.datetime(2026, 12, 6, 10, 29, 56, tzinfo=datetime.timezone.utc)


def record_copy_loop(rec: dict) -> str:
    """The comm copy loop a record of our megakernel ran (Scenario.copy_loop), by its date, for
    a measured forward of the Triton megakernel (mok, mok-gemm; BF16 or the Triton FP8 kernel):
    "serial" before COPY_AHEAD_SINCE (each chunk's row ids, then its peer offsets, then its
    rows), "ahead" before COPY_PIPE_SINCE (ids and offsets ahead, a column step at a time),
    "pipe" before COPY_RUNS_SINCE (two column steps in flight; push lanes scan every chunk),
    "runs" before COPY_SHARES_SINCE (push lanes copy their pair's run of every nsub-th tile),
    else "shares" (today's). Every other record: "shares" (the backward megakernel and the Gluon
    FP8 pass have loops of their own, and the model charges their copies alike)."""
    if (rec.get("system") not in KERNEL_SYSTEMS or rec.get("pass", "fwd") != "fwd"
            or rec.get("source") != "measured" or record_fp8_kernel(rec) == "gluon"):
        return "shares"
    try:
        when = datetime.datetime.fromisoformat(str(rec.get("date", "")))
    except ValueError:
        return "shares"
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.timezone.utc)
    if when < COPY_AHEAD_SINCE:
        return "serial"
    if when < COPY_PIPE_SINCE:
        return "ahead"
    if when < COPY_RUNS_SINCE:
        return "pipe"
    return "runs" if when < COPY_SHARES_SINCE else "shares"


def record_source_order(rec: dict) -> str:
    """The order of an expert's received rows a forward of our megakernel ran (mok_kernels
    KernelConfig.source_order; its `tiles` name it when not "rank"), else "rank"."""
    tiles = rec.get("tiles") if isinstance(rec.get("tiles"), dict) else {}
    if rec.get("system") not in KERNEL_SYSTEMS or rec.get("pass", "fwd") != "fwd":
        return "rank"
    return str(tiles.get("source_order", "rank"))


def record_design(rec: dict) -> dict[str, float]:
    """The design parameters (params.py "design:" values) a record's kernel ran with where they
    differ from the shipped files': {"source_order_rotated": 1.0} for a rotated source order,
    else {}. Predict such a record with Params.with_design(**record_design(rec))."""
    return {"source_order_rotated": 1.0} if record_source_order(rec) == "rotated" else {}


def record_fp8_kernel(rec: dict) -> str:
    """The FP8 forward kernel a record of our megakernel ran (Scenario.fp8_kernel): "gluon" where
    its `tiles` say fp8_kernel "gluon" (mok_kernels/bench.py forward_tiles: the Gluon pass of
    mok_kernels/gluon_fp8/mok.py), else "triton" (the Triton megakernel, every other record)."""
    tiles = rec.get("tiles") if isinstance(rec.get("tiles"), dict) else {}
    if (rec.get("system") not in KERNEL_SYSTEMS or rec.get("pass", "fwd") != "fwd"
            or rec.get("precision", "bf16") != "fp8"):
        return "triton"
    return "gluon" if tiles.get("fp8_kernel") == "gluon" else "triton"


def record_bwd_tiles(rec: dict) -> str:
    """The backward tiles a record of our megakernel ran, as the model reads them
    (Scenario.bwd_tiles): "training" where its kernel variant is the layer's training tiles for
    its shape (training_variant), else "recompute" (every other record: the recomputing
    default, and the other variants, which the fits skip)."""
    return "training" if training_variant(rec) else "recompute"


def record_scenario(rec: dict) -> Scenario:
    """The Scenario a run record measured."""
    return workload_scenario(*workload_key(rec))


def record_config(rec: dict) -> Config | dict:
    """A full Config when the record names every knob, else the knobs it names (tuner fills).

    The kernel raises a ring buffer smaller than one minibatch to one minibatch plus one row
    tile (mok_kernels/megakernel.py, KernelConfig.macrobatch), and so does this reading.
    """
    cfg = rec.get("config") or {}
    if all(k in cfg for k in KNOBS):
        knobs = {k: cfg[k] for k in KNOBS}
        if int(knobs["macrobatch"]) < int(knobs["minibatch"]):
            knobs["macrobatch"] = int(knobs["minibatch"]) + 128
        return Config(**knobs)
    return {k: cfg[k] for k in KNOBS if k in cfg}


def predictable(rec: dict) -> bool:
    """Whether the model predicts this record: an MoE layer system it knows (not microbenchmarks
    or kernel-only systems such as torch-grouped or gemm-only) on a routing it can reproduce."""
    return rec["system"] in SYSTEMS and routing_reproduced(rec)


def record_where(rec: dict) -> str:
    """Where a record came from, for messages: "FILE:LINE", or its id when it was not read."""
    return f"{rec['_file']}:{rec['_line']}" if "_file" in rec else f"record {rec.get('id')!r}"


def check_posed(rec: dict) -> None:
    """Raise MokInputError naming the record (file and line) when the model cannot pose its
    question: an unknown preset, EP above the experts, a bad routing, knobs out of range, or a
    GPU whose SM count is not its preset's (the model would predict the preset's)."""
    try:
        if predictable(rec):
            hw = record_scenario(rec).hardware
            sms = rec["hardware"].get("sms")
            if sms is not None and sms != hw.sms:
                raise MokInputError(f"hardware.sms {sms!r}: preset {hw.name} has {hw.sms} SMs, "
                                    f"and the model predicts that GPU; record the preset of the "
                                    f"GPU it ran on")
            record_config(rec)
    except MokInputError as exc:
        raise MokInputError(f"{record_where(rec)}: {exc}") from None


def model_records(records: list[dict]) -> tuple[list[dict], list[str]]:
    """The records the model predicts and is judged on (predictable, today's default kernel
    variants), and notes naming what was left out and why. A record whose question the model
    cannot pose stops the reader with its file and line, before any work."""
    for rec in records:
        check_posed(rec)
    kept, variant_note = split_default_variant([r for r in records if predictable(r)])
    return kept, not_predicted(records) + ([variant_note] if variant_note else [])


def not_predicted(records: list[dict]) -> list[str]:
    """Notes naming the records predictable() leaves out (microbenchmarks aside), by reason."""
    other = Counter(r["system"] for r in records
                    if r["system"] not in SYSTEMS and not r["system"].startswith("micro-"))
    zipf = sum(r["system"] in SYSTEMS and record_zipf_order(r) is None for r in records)
    hot = sum(r["system"] in SYSTEMS and not hot_reproduced(r) for r in records)
    notes = [f"records of systems the model does not predict were not used: {dict(other)}"] \
        if other else []
    if hot:
        notes.append(f"{hot} hot records measured before 2026-12-01 13:00 UTC with few experts "
                     f"were not used: their draw gave expert 0 more than the hot share "
                     f"(records.hot_reproduced)")
    if zipf:
        notes.append(f"{zipf} zipf records measured before 2026-12-01 03:40 UTC were not used: their expert "
                     f"popularity order (torch.randperm on the GPU) is not in the model's table "
                     f"of those orders (records.routing_reproduced)")
    return notes


def record_zipf_order(rec: dict) -> str | None:
    """The expert popularity order (workload.ZIPF_ORDERS) the record's zipf routing had, "model"
    for other routings, or None where the model cannot draw it.

    Zipf records written since 2026-12-01 03:40 UTC say ``"order": "model"``
    (workload.zipf_order). Measured zipf records before that drew the order with torch.randperm
    on the GPU: "torch-cuda-randperm" where the table of those draws
    (presets/legacy_zipf_orders.json, measured on an H200) holds the record's expert count and
    seed and the record's software.torch is the table's torch version, else None. Published
    records give no draw to reproduce; the model reads them in its own order."""
    routing = rec["routing"]
    if (routing.get("kind", "uniform") != "zipf" or routing.get("order") == "model"
            or rec.get("source") == "published"):
        return "model"
    table = legacy_zipf_table()
    if (rec.get("software") or {}).get("torch") != table["source"]["torch"]:
        return None
    experts = _model(model_key(rec)).routed_experts
    if f"{experts}:{int(routing.get('seed', 0))}" not in table["perms"]:
        return None
    return "torch-cuda-randperm"


# a hot record drawn the old way is read as the model's hot routing while the extra share of
# expert 0 that old draw gave, (1 - F k) / E, stays within this fraction of F
HOT_LEGACY_TOLERANCE = 0.02


def hot_reproduced(rec: dict) -> bool:
    """Whether the model's hot:F draw is the record's (mok_model.workload: the tokens that do not
    put expert 0 first pick among experts 1..E-1). Kernel records written before 2026-12-01
    13:00 UTC (no ``"draw": "model"``) let those tokens pick expert 0 too, so expert 0 had
    F + (1 - F k) / E of the routes: the model reads them as hot:F only where that extra share is
    at most HOT_LEGACY_TOLERANCE of F (many experts); mixtral's 8 experts at hot:0.1 doubled it."""
    routing = rec["routing"]
    if (routing.get("kind") != "hot" or routing.get("draw") == "model"
            or rec.get("source") == "published"):
        return True
    m = _model(model_key(rec))
    share = float(routing.get("arg", 0.0))
    return (1.0 - share * m.top_k) / m.routed_experts <= HOT_LEGACY_TOLERANCE * share


def routing_reproduced(rec: dict) -> bool:
    """Whether the model draws the routing the run had: uniform and file routings, zipf records
    in the model's order and the earlier zipf records whose torch.randperm order the table of
    those draws holds (record_zipf_order is not None), and hot records (hot_reproduced)."""
    return record_zipf_order(rec) is not None and hot_reproduced(rec)


# ---- kernel variants: which tile options a MoK record ran with ----
#
# Records written since 2026-12-01 carry `tiles` (mok_kernels/bench.py): forward block_m,
# bn_gu, bn_dn, block_k, num_warps, num_stages (+ fp8_kernel for FP8); backward the fields of
# mok_kernels.backward.BackwardTiles. Older records name a non-default variant in their note
# ("fp8 kernel v2-bm64", "backward tiles w_flat=1,..."); without either they ran the default of
# their day. The model's backward and FP8 terms describe the current default variants only.

# the current defaults (mok_kernels/megakernel.py KernelConfig, backward.py BackwardTiles),
# restricted to the options that distinguish the variants measured so far
DEFAULT_FP8 = {"fp8_kernel": "v2", "block_m": 64, "num_stages": 4}
OLD_FP8 = {"fp8_kernel": "v1", "block_m": 128, "num_stages": 3}  # default until 2026-12-01
# the Gluon FP8 pass (fp8_kernel "gluon", since 2026-12-02; its own kernel, Scenario.fp8_kernel):
# its knobs as mok_kernels/bench.py records them in `tiles` (gluon_join, gluon_ys, gluon_home,
# gluon_cu; gluon_qv only where not 0) at the defaults of mok_kernels/gluon_fp8/mok.py (JOIN
# 350, YS, HOME; cu 1, qv 0)
DEFAULT_GLUON = {"fp8_kernel": "gluon", "gluon_join": 350, "gluon_ys": 1, "gluon_home": 1,
                 "gluon_cu": 1, "gluon_qv": 0}
DEFAULT_BWD = {"w_flat": 1, "a_fuse_gu": 1, "bw": 256, "bn_a": 64, "bn_x": 128, "bw_h": 128,
               "bk_rows": 64, "num_warps": 8, "num_stages": 3, "diag": 0, "saved_gu": 0,
               "w_direct": 0, "w_bf16": 0, "w_tma": 0, "a_epi": 0}
OLD_BWD = {**DEFAULT_BWD, "w_flat": 0, "a_fuse_gu": 0, "bw": 128}  # default until 2026-12-01
# The tiles the layer trains with (mok_kernels/backward.py TRAINING_TILES, "saved_gu=1,bn_a=256,
# a_epi=128,bn_x=256,w_direct=1", with w_bf16=1, which autograd adds for bf16 parameters):
# TRAINING_BWD where 256 divides the padded expert width, else TRAINING_BWD_NARROW (the kernel
# then runs the A items at bn_a 128 with their epilogue in registers). Scenario.bwd_tiles
# "training"; the "bwd-train" pass group (calibration/passes.py). w_bf16 is part of the variant:
# fp32 weight gradients (w_bf16=0: fp32 parameters) measured 11-13% slower at 1,024 tokens
# (calibration/runs/h200/bwd_direct.jsonl, kimi-k2 / glm-5 EP 8), a store the model has no term
# for, so those records are another variant, not the training tiles' noise.
TRAINING_BWD = {**DEFAULT_BWD, "saved_gu": 1, "bn_a": 256, "a_epi": 128, "bn_x": 256,
                "w_direct": 1, "w_bf16": 1}
TRAINING_BWD_NARROW = {**TRAINING_BWD, "bn_a": 128, "a_epi": 0}
TRAINING_A_COLUMNS = 256  # the A items' columns with a_epi: the padded width must be a multiple
# BF16 forward options besides group_m (KernelConfig): activation tiles through TMA, rows per
# dispatch copy step, K slices of the down GEMM (the default split_dn is the shape's since
# 2026-12-01 16:10 UTC: default_split_dn). Not the down column blocks an item walks (dn_blocks,
# the shape's since 2026-12-04: default_dn_blocks): like the copy loop, a record is described as
# it ran (record_dn_blocks, Scenario.dn_blocks) and stays in the fits and the held-out figures
DEFAULT_BF16 = {"tma_a": 0, "copy_rows": 16, "split_dn": 1, "list_lag": 1}


def default_split_dn(rec: dict) -> int:
    """The split_dn MoKLayer picks for a forward record's shape, EP and tokens on one GPU
    (mok_kernels/tiles.py forward_split_dn; 1 across real GPUs: group mode)."""
    from mok_kernels.tiles import forward_split_dn

    if rec["hardware"].get("gpus", 1) > 1:
        return 1
    m = _model(model_key(rec))
    return forward_split_dn(int(rec["tokens"]), m.top_k, m.routed_experts, int(rec["ep"]),
                            m.hidden, m.expert_width, precision=rec["precision"])


def default_dn_blocks(rec: dict) -> int:
    """The dn_blocks MoKLayer picks for a forward record's shape, EP and tokens on one GPU
    (mok_kernels/tiles.py forward_dn_blocks on the record's SMs; 1 across real GPUs: group mode,
    in FP8 and where the down GEMM is split)."""
    from mok_kernels.tiles import forward_dn_blocks

    if rec["hardware"].get("gpus", 1) > 1:
        return 1
    m = _model(model_key(rec))
    return forward_dn_blocks(int(rec["tokens"]), m.top_k, m.routed_experts, int(rec["ep"]),
                             m.hidden, m.expert_width, int(rec["hardware"].get("sms", 132)),
                             precision=rec["precision"], split_dn=default_split_dn(rec))


def _expert_width(rec: dict) -> int:
    return _model(model_key(rec)).expert_width


def kernel_variant(rec: dict) -> dict:
    """The tile options that tell a MoK record's kernel variant apart: from `tiles`, else from
    the note, else the old default (the default when records had neither). Forward records:
    group_m (1 where `tiles` does not name it: row tile by row tile, all records before
    2026-12-01 05:40 UTC) and, for FP8, the FP8 kernel options. Backward `bw` 0 (chosen from the
    shape) reads as 256 in `tiles` (today's rule) and as 128 in a note (the rule of its day)."""
    import re

    tiles, note = rec.get("tiles"), rec.get("note", "")
    if rec["pass"] == "bwd":
        if isinstance(tiles, dict):
            out = {**DEFAULT_BWD, **{k: int(v) for k, v in tiles.items() if k in DEFAULT_BWD}}
            out["bw"] = out["bw"] or 256
            return out
        found = re.search(r"backward tiles ([A-Za-z0-9_=,]+)", note)
        out = dict(OLD_BWD)
        if found and found.group(1) != "default":
            for item in found.group(1).split(","):
                name, _, val = item.partition("=")
                if name in out and val.lstrip("-").isdigit():
                    out[name] = int(val)
        out["bw"] = out["bw"] or 128
        return out
    group = {"group_m": int(tiles.get("group_m", 1)) if isinstance(tiles, dict) else 1}
    if rec["precision"] != "fp8":     # an option `tiles` does not name ran its default
        named = tiles if isinstance(tiles, dict) else {}
        return group | {k: int(named.get(k, v)) for k, v in DEFAULT_BF16.items()}
    if isinstance(tiles, dict) and tiles.get("fp8_kernel") == "gluon":
        return {k: tiles.get(k, DEFAULT_GLUON[k]) for k in DEFAULT_GLUON}
    if isinstance(tiles, dict):
        return {k: tiles.get(k, DEFAULT_FP8[k]) for k in DEFAULT_FP8} | group
    found = re.search(r"fp8 kernel (v\d)(-bm64)?", note)
    if not found:
        return dict(OLD_FP8) | group
    bm64 = bool(found.group(2))
    return {"fp8_kernel": found.group(1), "block_m": 64 if bm64 else 128,
            "num_stages": 4 if bm64 else 3} | group


def _padded_width(rec: dict) -> int:
    """The record's expert width zero-padded as MoKLayer pads it (mok_kernels/tiles.py)."""
    from mok_kernels.tiles import padded_width

    return padded_width(_expert_width(rec))


def effective_bwd_variant(rec: dict) -> dict:
    """A backward record's kernel_variant as the kernel ran it: a_epi where min(bn_a, 256)
    does not divide the padded expert width runs as without it, at bn_a min(bn_a, 128) (the
    forward's bn_gu; mok_kernels/backward.py MoKBackward)."""
    v = kernel_variant(rec)
    if v["a_epi"] and _padded_width(rec) % min(v["bn_a"], 256):
        v = {**v, "a_epi": 0, "bn_a": min(v["bn_a"], 128)}
    return v


def training_variant(rec: dict) -> bool:
    """Whether a measured BF16 backward of our megakernel ran the layer's training tiles for its
    shape: TRAINING_BWD where 256 divides the padded expert width, else TRAINING_BWD_NARROW
    (the variant as the kernel ran it, effective_bwd_variant). A line with no `source` (a
    registration's plan or prediction: a run to be measured) is read as a measured record; a
    published record never ran our kernel."""
    if (rec.get("system") not in KERNEL_SYSTEMS or rec.get("pass") != "bwd"
            or rec.get("precision") != "bf16" or rec.get("source", "measured") != "measured"):
        return False
    wide = _padded_width(rec) % TRAINING_A_COLUMNS == 0
    return effective_bwd_variant(rec) == (TRAINING_BWD if wide else TRAINING_BWD_NARROW)


def runtime_mode_words(rec: dict) -> bool:
    """Whether a measured forward MoK record timed push dispatch with push combine on the kernel
    that took its mode words (PUSH_DISPATCH, PULL_COMBINE, JOIN) as runtime ints: every record
    written before 2026-12-03 15:02 UTC (commit e060615), none of which carries
    software.kernel_source. A push combine compiled every mode's branches into that kernel, and
    push/push ran up to 1.4x slower than on today's (mok_kernels/NOTES.md "Session 35"; other
    mode pairs measured within the run's drift), so those records time a kernel that no longer
    runs. (The Gluon FP8 pass, its own kernel, runs pull dispatch only.)"""
    cfg = rec.get("config") or {}
    return (rec["system"] == "mok" and rec["source"] == "measured" and rec["pass"] == "fwd"
            and cfg.get("dispatch") == "push" and cfg.get("combine") == "push"
            and "kernel_source" not in (rec.get("software") or {}))


# the megakernel's source digest (software.kernel_source) while its flattened down items (dn_blocks
# > 1) released the pull combine's counter with a barrier per block inside the loop: 2026-12-04
# 15:18-15:37 UTC (commits 81c48d4-137f408; 1559b8a fixed it)
PULL_BLOCK_BARRIER_SOURCES = ("1d9a0290ed13051e",)


def pull_block_barriers(rec: dict) -> bool:
    """Whether a measured forward MoK record timed pull combine with several down blocks an item
    on the kernel that released the combine's counter once per block inside the item's K loop
    (PULL_BLOCK_BARRIER_SOURCES): its barrier stalled the loop's pipeline, 1.4-1.5x the pass of
    one block an item, where today's kernel (one release per item) runs 0.97-0.99x
    (mok_kernels/NOTES.md "Session 42"). Six records of seed 17 (calibration/runs/h200_drawn/
    drawn17_blocks.jsonl.gz) time that kernel, which no longer runs."""
    cfg = rec.get("config") or {}
    tiles = rec.get("tiles") if isinstance(rec.get("tiles"), dict) else {}
    return (rec["system"] in KERNEL_SYSTEMS and rec.get("source") == "measured"
            and rec.get("pass") == "fwd" and cfg.get("combine") == "pull"
            and int(tiles.get("dn_blocks", 1)) > 1
            and (rec.get("software") or {}).get("kernel_source") in PULL_BLOCK_BARRIER_SOURCES)


def superseded_kernel(rec: dict) -> bool:
    """Whether a measured record timed a kernel that no longer runs in any configuration today's
    can be asked for: runtime_mode_words or pull_block_barriers (left out of fits, held-out
    figures and sweeps' comparisons)."""
    return runtime_mode_words(rec) or pull_block_barriers(rec)


def default_variant(rec: dict, old: bool = False) -> bool:
    """Whether a record ran today's default kernel variant (MoK and its GEMM phases alone,
    mok-gemm; every other record does: the variants are our megakernel's, and so does a
    published one: another kernel); `old`: the
    defaults before 2026-12-01 instead (to study the older records, never for the shipped fit).
    The forward's default group_m depends on the expert width, its split_dn on the shape, EP and
    tokens (mok_kernels/tiles.py)."""
    if rec["system"] not in ("mok", "mok-gemm") or rec["source"] != "measured":
        return True
    if (superseded_kernel(rec) and not old) or record_source_order(rec) != "rank":
        return False
    v = kernel_variant(rec)
    if rec["pass"] == "bwd":
        return v == (OLD_BWD if old else DEFAULT_BWD)
    from mok_kernels.tiles import forward_group_m
    m = _model(model_key(rec))
    group = {"group_m": 1 if old else forward_group_m(m.expert_width, m.hidden)}
    if rec["precision"] == "fp8" and v.get("fp8_kernel") == "gluon":
        return not old and v == DEFAULT_GLUON
    if rec["precision"] == "fp8":
        return v == (OLD_FP8 if old else DEFAULT_FP8) | group
    return v == group | DEFAULT_BF16 | {"split_dn": 1 if old else default_split_dn(rec)}


def ran_todays_choices(rec: dict) -> bool:
    """todays_kernel, and where the layer chooses a tile option from the shape that a record
    describes as it ran rather than as a variant (dn_blocks: record_dn_blocks), today's choice:
    what a table of today's kernel speed reads (benchmarks/kernel_space.py)."""
    return todays_kernel(rec) and record_dn_blocks(rec) == 0


def todays_kernel(rec: dict) -> bool:
    """Whether a record ran the kernel as it runs today: its default variant and, for a model
    without a shared expert, no zero shared expert (the GEMM table and the kernel tables read
    only these; the fits also read the older records, described as they ran)."""
    return default_variant(rec) and not record_zero_shared_slot(rec)


def variant_label(rec: dict) -> str:
    """A short name of a record's kernel variant, for notes (e.g. "fp8 v1 block_m 128")."""
    if runtime_mode_words(rec):
        return "forward push/push with runtime mode words (before 2026-12-03 15:02 UTC)"
    if pull_block_barriers(rec):
        return "forward pull combine with a release per down block (2026-12-04 15:18-15:37 UTC)"
    if record_source_order(rec) != "rank":
        return f"forward with source order {record_source_order(rec)}"
    v = kernel_variant(rec)
    if rec["pass"] == "bwd":
        if training_variant(rec):
            return "bwd training tiles"
        return "bwd " + ",".join(f"{k}={v[k]}" for k in ("w_flat", "a_fuse_gu", "bw"))
    if rec["precision"] != "fp8":
        return (f"bf16 forward group_m {v['group_m']}" + (" tma_a" if v["tma_a"] else "")
                + "".join(f" {k} {v[k]}" for k in ("copy_rows", "split_dn", "list_lag")
                          if v[k] != DEFAULT_BF16[k]))
    if v["fp8_kernel"] == "gluon":
        return "fp8 gluon " + ",".join(f"{k}={v[k]}" for k in DEFAULT_GLUON if k != "fp8_kernel")
    return f"fp8 {v['fp8_kernel']} block_m {v['block_m']} stages {v['num_stages']} group_m {v['group_m']}"


def split_default_variant(records: list[dict], old: bool = False) -> tuple[list[dict], str | None]:
    """(records of the default kernel variants, a note naming how many others were skipped and
    which variants they ran, or None when none was); `old` as in default_variant."""
    kept = [r for r in records if default_variant(r, old)]
    skipped = Counter(variant_label(r) for r in records if not default_variant(r, old))
    if not skipped:
        return kept, None
    n = sum(skipped.values())
    return kept, (f"skipped {n} MoK record{'s' if n != 1 else ''} of non-default kernel variants ("
                  + "; ".join(f"{c} {k}" for k, c in sorted(skipped.items()))
                  + f"): the model describes the {'old ' if old else ''}default variants")
