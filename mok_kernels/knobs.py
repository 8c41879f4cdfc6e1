"""Knobs chosen before launch: the megakernel's six knobs (dispatch, combine, minibatch, comm_sms,
macrobatch, capacity) from the model, for this hardware, layer shape, EP degree and token count.

Two sources, one reading:
- the tuner (analytic engine, BF16 forward, seed 0), answered once per question and cached in the
  process. Not told the router's skew (KernelConfig.knob_routing unset), it picks the setting
  whose worst regret over uniform, zipf:1.2 and hot:0.1 routing is least (`mok_model.tuner.
  tune_robust`, `mok tune --routing robust`): the pick for uniform routing alone ran 1.29-1.30x
  the setting swept beside it under hot routing at EP 16 on the H200 (session 44). Told a routing, it
  picks for that routing (`mok tune --routing R`);
- a knob table written by `mok tune --table FILE.json` (robust choices unless `--routing` says
  otherwise; the table names its routing): the tuner's choice per token bucket; a layer takes
  the nearest bucket at or above its token count.
Knobs given explicitly always win; the tuner chooses the others with the given ones fixed (a table
fills them from its bucket).

Capacity: where none is given, the capacity the tuner or a table picks is raised to the
uniform-routing and hot-expert bounds (mok_model/capacity.py, the same question `mok predict`
asks without knobs). Skew beyond one hot expert a rank can still overflow: the kernel then traps
the launch (on_error="trap") or raises CapacityOverflowError (on_error="raise"), never drops rows
silently; give capacity explicitly (up to 1.0, which never overflows) for such routers.

Nothing here imports torch or Triton: `mok tune --table` uses it on machines without either.
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import json
import math
import numbers
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mok_model
from mok_model import route_cache
from mok_model.capacity import safe_capacity, tune_as_layer
from mok_model.errors import MokInputError
from mok_model.fileio import loads_json
from mok_model.params import Params, load_params
from mok_model.presets import (HARDWARE_MAX, Hardware, MoEModel, load_hardware, load_model,
                               model_names)
from mok_model.records import LATENCY_MS
from mok_model.scenario import (KNOBS, MAX_LIST_LAG, Config, Scenario, check_ep_tokens, check_knob,
                                 check_list_lag, plain)
from mok_model.tuner import ROBUST, lag_choices
from mok_model.workload import parse_routing

TABLE_SCHEMA = "mok-knobs/1"
DEFAULT_BUCKETS = (64, 128, 256, 512, 1024, 2048, 4096, 8192)
SHAPE_KEYS = ("hidden", "expert_width", "routed_experts", "top_k", "shared_width")


class KnobTableError(MokInputError):
    """A knob table that cannot be used: names the file and the problem in one line."""


@dataclass(frozen=True)
class Choice:
    """Resolved knobs, where they came from, and the model's latency for them (ms; from a table:
    the bucket's prediction at the bucket's token count; None where no prediction applies)."""

    knobs: dict[str, Any]
    source: str
    predicted_ms: float | None = None
    list_lag: int = 1  # the kernel's work-list lag chosen with the knobs (KernelConfig.list_lag)


# ---------------------------------------------------------------- layer shape -> model preset

def shape_of(model: MoEModel) -> dict[str, int]:
    """The shape the megakernel sees: shared_width is the total shared width (0: none)."""
    return {"hidden": model.hidden, "expert_width": model.expert_width,
            "routed_experts": model.routed_experts, "top_k": model.top_k,
            "shared_width": model.shared_experts * model.shared_width}


def layer_model(shape: MoEModel | dict) -> MoEModel:
    """A MoEModel for a layer shape {hidden, expert_width, routed_experts, top_k, shared_width}:
    the model preset with that shape when one exists (first in preset order), else "custom"."""
    if isinstance(shape, MoEModel):
        return shape
    if not isinstance(shape, dict):
        raise MokInputError(f"layer shape {shape!r}: a MoEModel or a dict of {', '.join(SHAPE_KEYS)}")
    missing = [k for k in SHAPE_KEYS if k not in shape]
    if missing:
        raise MokInputError(f"layer shape {shape!r} lacks {missing}")
    unknown = sorted(map(str, set(shape) - set(SHAPE_KEYS)))
    if unknown:  # never answer for another layer than the one described (a misspelt key)
        raise MokInputError(f"layer shape: unknown key(s) {unknown}; a layer shape has exactly "
                            f"{list(SHAPE_KEYS)} (shared_width: all shared experts' width)")
    for k in SHAPE_KEYS:
        if isinstance(shape[k], bool) or not isinstance(shape[k], numbers.Integral):
            raise MokInputError(f"layer shape {k}={shape[k]!r} must be an integer")
    want = {k: int(shape[k]) for k in SHAPE_KEYS}
    for name in model_names():
        m = load_model(name)
        if shape_of(m) == want:
            return m
    base = load_model(model_names()[0])
    sw = want["shared_width"]
    return base.with_(name="custom", hidden=want["hidden"], expert_width=want["expert_width"],
                      routed_experts=want["routed_experts"], top_k=want["top_k"],
                      shared_experts=1 if sw else 0, shared_width=sw, moe_layers=1, layers=1,
                      source="a MoKLayer's weight shapes")


# ---------------------------------------------------------------- the tuner's choice

_CACHE: dict[tuple, Choice] = {}
_PARAMS: dict[tuple, Params] = {}


def _hardware(hardware: str | Hardware) -> Hardware:
    return hardware if isinstance(hardware, Hardware) else load_hardware(hardware)


def _where(params) -> Any:
    """A parameters file's name as this process's caches key it: its absolute path (the same
    name from another working folder is another file)."""
    return os.path.abspath(params) if isinstance(params, (str, os.PathLike)) else params


def _params(hw: Hardware, params: str | None, allow_mismatch: bool = False) -> Params:
    """The parameters file for hw (its default where None); one fitted for other hardware only
    with allow_mismatch (mok_model.params.load_params)."""
    key = (hw.name, _where(params), allow_mismatch)
    if key not in _PARAMS:
        _PARAMS[key] = load_params(params, hw.name, allow_mismatch)
    return _PARAMS[key]


def _check_given(given: dict) -> None:
    unknown = sorted(set(given) - set(KNOBS))
    if unknown:
        raise MokInputError(f"unknown knob(s) {unknown}; knobs are {KNOBS}")
    for k, v in given.items():
        check_knob(k, v)


def _preset_sms(name: str) -> int | None:
    try:
        return load_hardware(name).sms
    except MokInputError:  # a hardware TOML file's own name
        return None


def tuned_choice(hardware: str | Hardware, shape: MoEModel | dict, ep: int, tokens: int,
                 params: str | Params | None = None, given: dict | None = None,
                 precision: str = "bf16", list_lag: int | None = None,
                 routing: str = ROBUST, allow_params_mismatch: bool = False) -> Choice:
    """The tuner's knobs for one question (uncached), with the capacity kept safe; `precision`
    of the forward pass (bf16 or fp8: the model's FP8 terms); `list_lag`: the kernel's work-list
    lag, or None to choose it with the knobs where the tuner searches it (tuner.lag_choices);
    `routing`: the routing the knobs are chosen for (`mok predict --routing`'s spec: the slowest
    GPU's pass is what the tuner minimizes), or "robust": the least worst regret over
    tuner.robust_routings (tuner.tune_robust; `predicted_ms` is then uniform routing's);
    `allow_params_mismatch`: take a parameters file fitted for other hardware."""
    hw, model = _hardware(hardware), layer_model(shape)
    if not isinstance(given, (dict, type(None))):
        raise MokInputError(f"given knobs {given!r}: a dict of knob values")
    if not isinstance(params, (str, os.PathLike, Params, type(None))):
        raise MokInputError(f"--params {params!r}: name a parameters file (JSON) or give a Params")
    if not isinstance(allow_params_mismatch, bool):
        raise MokInputError(f"allow_params_mismatch={allow_params_mismatch!r}: True or False")
    given = dict(given or {})
    _check_given(given)
    if "macrobatch" in given and "minibatch" not in given:
        raise MokInputError(f"macrobatch={given['macrobatch']} given without minibatch: give both "
                            f"(the ring holds whole minibatches) or neither")
    p = params if isinstance(params, Params) else _params(hw, params, allow_params_mismatch)
    robust = routing == ROBUST
    scn = Scenario(hw, model, ep, tokens, "fwd", precision, routing="uniform" if robust else routing,
                   list_lag=list_lag or 1)
    lags = lag_choices(scn) if list_lag is None else None
    source = f"tuner: {hw.name} params {p.path}" + (f" ({precision})" if precision != "bf16" else "")
    source += f" for routing {routing}" if routing not in ("uniform", ROBUST) else ""
    if hw.sms != _preset_sms(hw.name):
        source += f" at {hw.sms} SMs per rank"
    try:
        best, note = tune_as_layer(scn, p, given, lags, robust=robust)
        source += f"; {note}" if note else ""
    except MokInputError as exc:
        raise MokInputError(f"choosing knobs for {hw.name} / {model.name} / EP {ep} / {tokens} "
                            f"tokens with {given or 'no knobs'} given: {exc}") from None
    if given:
        source += f"; given: {', '.join(k for k in KNOBS if k in given)}"
    return Choice(best.config.as_dict(), source, best.latency_ms, best.list_lag)


def choose_knobs(hardware: str | Hardware | None, shape: MoEModel | dict, ep: int, tokens: int,
                 table: str | os.PathLike | None = None, params: str | None = None,
                 given: dict | None = None, precision: str = "bf16",
                 list_lag: int | None = None, routing: str | None = None,
                 allow_params_mismatch: bool = False) -> Choice:
    """The knobs for one layer: `given` knobs win; the rest from `table` (its bucket for
    `tokens`) when one is named, else from the tuner for `hardware` (cached per question).
    `list_lag` None: the work-list lag too (a table's bucket lag, or the tuner's); else that lag.
    `routing`: the routing the tuner chooses for (tuned_choice); None: "robust" from the tuner,
    a table's own routing from a table (a table written for another routing is refused).
    `allow_params_mismatch`: take a `params` file fitted for other hardware. Every knob given:
    those knobs ("given"), refused where the tuner or the table would refuse some of them given
    (without either: where they are no knob set, scenario.Config).

    `hardware`: a preset name, a Hardware (e.g. with the SMs one rank gets), or None with a table
    (then the table's hardware is taken as is). Raises MokInputError (a ValueError) naming the
    problem when no choice can be made.
    """
    if not isinstance(given, (dict, type(None))):
        raise MokInputError(f"given knobs {given!r}: a dict of knob values")
    # numpy scalars (a layer's sizes or knobs from numpy code) are read as the values they hold
    given = {k: plain(v) for k, v in (given or {}).items() if v is not None}
    ep, tokens, list_lag = plain(ep), plain(tokens), plain(list_lag)
    _check_given(given)
    check_ep_tokens(ep, tokens)
    if list_lag is not None:
        check_list_lag(list_lag)
    # every knob given: checked as the tuner or the table checks some given ones, then taken as is
    every = Choice({k: given[k] for k in KNOBS}, "given", None, list_lag or 1) \
        if len(given) == len(KNOBS) else None
    if every is not None and hardware is None and table is None:
        Config(**given)         # no hardware to check them on: the knob set's own rule
        return every
    hw = None if hardware is None else _hardware(hardware)
    model = layer_model(shape)
    if table is not None:
        if precision != "bf16":
            raise MokInputError(f"knob tables hold BF16 choices; a {precision} layer's knobs come "
                                f"from the tuner (leave knob_table unset) or are given")
        doc = {**load_table(table), "_path": str(table)}
        if routing is not None and routing != table_routing(doc):
            raise MokInputError(f"knob table {table} holds choices for routing "
                                f"{table_routing(doc)!r}, the layer asks for {routing!r}: write the "
                                f"table with `mok tune --table ... --routing {routing}` or leave "
                                f"knob_routing unset")
        c = _table_choice(doc, hw, model, ep, tokens, given)
        if every is not None:
            return every
        return c if list_lag is None else dataclasses.replace(c, list_lag=list_lag)
    if hw is None:
        raise MokInputError("no hardware to ask the model for: name a hardware preset or a knob table")
    if not isinstance(allow_params_mismatch, bool):
        raise MokInputError(f"allow_params_mismatch={allow_params_mismatch!r}: True or False")
    if not isinstance(params, (str, os.PathLike, type(None))):   # answers are kept by file
        raise MokInputError("params: a Params object; choose_knobs takes a parameters file (JSON; "
                            "knobs.tuned_choice takes a Params)" if isinstance(params, Params) else
                            f"--params {params!r}: name a parameters file (JSON)")
    _params(hw, params, allow_params_mismatch)   # refused before any kept answer is read
    routing = ROBUST if routing is None else routing
    key = (hw, _where(params), tuple(sorted(shape_of(model).items())), ep, tokens,
           tuple(sorted(given.items())), precision, list_lag, routing)
    if key not in _CACHE:
        _CACHE[key] = _kept_choice(hw, model, ep, tokens, params, given, precision, list_lag,
                                   routing, allow_params_mismatch)
    return _CACHE[key] if every is None else every


def _kept_choice(hw: Hardware, model: MoEModel, ep: int, tokens: int, params: str | None,
                 given: dict, precision: str, list_lag: int | None, routing: str,
                 allow_params_mismatch: bool = False) -> Choice:
    """tuned_choice, kept across processes: read from the route cache's folder where an earlier
    process answered the same question from the same code, presets and parameters files
    (route_cache.answer_key), else computed and written there."""
    key = _answer_key(hw, params, model, ep, tokens, given, precision, list_lag, routing,
                      allow_params_mismatch)
    if key is not None and (kept := _kept(route_cache.load_answer(key))) is not None:
        return kept
    c = tuned_choice(hw, model, ep, tokens, params, given, precision, list_lag, routing,
                     allow_params_mismatch)
    if key is not None:
        route_cache.store_answer(key, {"knobs": c.knobs, "source": c.source,
                                       "predicted_ms": c.predicted_ms, "list_lag": c.list_lag})
    return c


_MODEL_DIR = Path(__file__).parents[1] / "mok_model"
# the code a knob answer is computed with: the model's package and the kernel modules it reads
# (tests/test_knobs.py checks that a choice imports no other module of either package)
ANSWER_CODE = (_MODEL_DIR, _MODEL_DIR / "sim", _MODEL_DIR / "presets",
               *(Path(__file__).with_name(n) for n in ("__init__.py", "knobs.py", "tiles.py",
                                                       "buffers.py")))
# every parameters file a preset's default can name: the files and their GEMM tables (whose
# points files the model never reads)
SHIPPED_PARAMS = (_MODEL_DIR / "params", _MODEL_DIR / "params" / "gemm")


@functools.lru_cache(maxsize=2)
def _listed(shipped: bool) -> tuple[Path, ...]:
    """ANSWER_CODE's files, and SHIPPED_PARAMS' with `shipped` (listed once a process)."""
    files = []
    for where in ANSWER_CODE + (SHIPPED_PARAMS if shipped else ()):
        files += sorted(where.glob("*.py")) + sorted(where.glob("*.toml")) + sorted(
            where.glob("*.json")) if where.is_dir() else [where]
    return tuple(files)


def _answer_files(hw: Hardware, params: str | None, allow_mismatch: bool) -> list[Path]:
    """The files a question's answer is computed from: ANSWER_CODE, and the shipped parameters
    (params None) or the given file with the GEMM tables it names."""
    files = list(_listed(params is None))
    if params is not None:    # absolute: the same name from another folder is another file
        p = _params(hw, params, allow_mismatch)
        files.append(Path(p.path).resolve())
        t = p.gemm_table
        if t is not None and t.path:
            files.append(Path(t.path).resolve())
            if t.transferred_from:
                files.append((Path(t.path).parent / t.transferred_from).resolve())
    return files


def _answer_key(hw: Hardware, params: str | None, model: MoEModel, ep: int, tokens: int,
                given: dict, precision: str, list_lag: int | None, routing: str,
                allow_mismatch: bool = False) -> dict | None:
    """The question's key across processes, or None where it cannot be kept: values that JSON
    does not hold exactly, a routing file (its contents may change; the route cache does not
    keep them either), or a file of the answer's changed since this process imported mok_model."""
    if not all(type(v) in (int, float, str, bool) for v in given.values()) or not all(
            type(v) is int for v in (ep, tokens)) or not (list_lag is None or type(list_lag) is int):
        return None
    if not isinstance(routing, str) or routing != ROBUST and not (
            routing == "uniform" or routing.startswith(("zipf:", "hot:"))):
        return None
    files = _answer_files(hw, params, allow_mismatch)
    try:    # a file changed since this module was imported may not be the code that runs
        if max(f.stat().st_mtime for f in files) > mok_model.IMPORTED_AT:
            return None
    except OSError:
        return None
    question = {"hardware": repr(hw), "model": repr(model), "ep": ep, "tokens": tokens,
                "given": sorted([k, v] for k, v in given.items()), "precision": precision,
                "list_lag": list_lag, "routing": routing,
                "params": _where(params)}
    return route_cache.answer_key(question, tuple(files))


def _a_latency(ms) -> bool:
    """A predicted pass time (ms) within records.LATENCY_MS (beyond it is no prediction of ours)."""
    return not isinstance(ms, bool) and isinstance(ms, (int, float)) and (
        LATENCY_MS[0] <= ms <= LATENCY_MS[1])


def _kept(answer: dict | None) -> Choice | None:
    """A kept answer as a Choice, or None where its fields are not a choice's."""
    if answer is None or set(answer) != {"knobs", "source", "predicted_ms", "list_lag"}:
        return None
    knobs, ms, lag = answer["knobs"], answer["predicted_ms"], answer["list_lag"]
    try:
        if not isinstance(knobs, dict) or set(knobs) != set(KNOBS):
            return None
        Config(**knobs)
    except (MokInputError, TypeError):
        return None
    if not isinstance(answer["source"], str) or type(lag) is not int or lag < 1 or not (
            ms is None or _a_latency(ms)):
        return None
    return Choice(knobs, answer["source"], ms, lag)


# ---------------------------------------------------------------- knob tables

def build_table(hardware: str, model: str | MoEModel | dict, ep: int,
                buckets: list[int] | tuple[int, ...], params: str | None = None,
                allow_params_mismatch: bool = False, given: dict | None = None,
                command: str = "", list_lag: int | None = None, routing: str = ROBUST) -> dict:
    """A knob table: the tuner's choice (as `choose_knobs` makes it) for each token bucket, with
    the work-list lag (`list_lag`, or chosen with the knobs where None), for `routing` ("robust":
    what a layer picks without a table; or a routing spec).
    `model`: a preset name or TOML file, a MoEModel, or a layer shape dict."""
    hw = load_hardware(hardware)
    m = load_model(model) if isinstance(model, str) else layer_model(model)
    if not isinstance(buckets, (list, tuple)) or not all(
            isinstance(b, numbers.Integral) and not isinstance(b, bool) for b in buckets):
        raise MokInputError(f"--tokens-buckets {buckets!r}: a list of whole token counts >= 1 is "
                            f"required")
    if not isinstance(given, (dict, type(None))):
        raise MokInputError(f"given knobs {given!r}: a dict of knob values")
    given_buckets = [int(b) for b in buckets]
    buckets = sorted(set(given_buckets))
    if not buckets or buckets[0] < 1:
        raise MokInputError(f"--tokens-buckets {given_buckets}: need token counts >= 1")
    if len(buckets) != len(given_buckets):
        raise MokInputError(f"--tokens-buckets {given_buckets}: each token count once")
    p = load_params(params, hw.name, allow_params_mismatch)
    given = {k: v for k, v in (given or {}).items() if v is not None}
    t0 = time.perf_counter()
    rows = []
    for n in buckets:
        try:
            c = tuned_choice(hw, m, ep, n, p, given, list_lag=list_lag, routing=routing)
        except MokInputError as exc:
            raise MokInputError(f"--tokens-buckets bucket {n}: {exc}") from None
        rows.append({"tokens": n, "config": c.knobs, "list_lag": c.list_lag,
                     "predicted_ms": c.predicted_ms, "source": c.source})
    return {"schema": TABLE_SCHEMA, "hardware": hw.name, "sms": hw.sms, "model": m.name,
            "shape": shape_of(m), "ep": ep, "pass": "fwd", "precision": "bf16",
            "routing": routing, "seed": 0, "engine": "analytic", "params": p.path,
            "given": given, "date": datetime.datetime.now(datetime.timezone.utc).isoformat(
                timespec="seconds"), "command": command,
            "seconds": round(time.perf_counter() - t0, 3), "buckets": rows}


def write_table(path: str | os.PathLike, doc: dict) -> None:
    """Write a knob table atomically (a temporary file in the same folder, then rename)."""
    import tempfile  # late: 3 ms to import, and a process that only reads never needs it

    path = Path(path)
    _validate_table(doc, str(path))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    except OSError as exc:
        raise KnobTableError(f"knob table {path}: cannot write ({exc.strerror})") from None
    umask = os.umask(0)
    os.umask(umask)
    try:
        os.chmod(tmp, 0o666 & ~umask)       # mkstemp's 0600 -> what open() would have given
        with os.fdopen(fd, "w") as fh:
            fh.write(json.dumps(doc, indent=1) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


_TABLE_FIELDS: dict[str, type | tuple[type, ...]] = {
    "schema": str, "hardware": str, "sms": int, "model": str, "shape": dict, "ep": int,
    "pass": str, "precision": str, "params": (str, type(None)), "date": str, "command": str,
    "buckets": list}


def _validate_table(doc: Any, where: str) -> None:
    def bad(msg: str) -> KnobTableError:
        return KnobTableError(f"knob table {where}: {msg}")

    if not isinstance(doc, dict):
        raise bad("must be a JSON object")
    if doc.get("schema") != TABLE_SCHEMA:
        raise bad(f"schema {doc.get('schema')!r} is not {TABLE_SCHEMA!r}")
    for key, kind in _TABLE_FIELDS.items():
        if key not in doc:
            raise bad(f"missing field {key!r}")
        v = doc[key]
        if not isinstance(v, kind) or (kind is int and isinstance(v, bool)):
            raise bad(f"field {key!r}={v!r} has the wrong type")
    if not isinstance(doc.get("routing", "uniform"), str):
        raise bad(f"field 'routing'={doc['routing']!r} must be a routing spec or 'robust'")
    if doc["ep"] < 1 or doc["sms"] < 1:
        raise bad(f"ep={doc['ep']} and sms={doc['sms']} must be >= 1")
    if not doc["hardware"].strip() or doc["hardware"] != doc["hardware"].strip() or \
            not doc["hardware"].isprintable():     # a layer without hardware takes it as named
        raise bad(f"hardware={doc['hardware']!r} must name the hardware (a preset or a hardware "
                  f"file's name: printable, no surrounding space)")
    if doc["sms"] > HARDWARE_MAX["sms"][0]:      # as a hardware file's sms
        raise bad(f"sms={doc['sms']} must be at most {HARDWARE_MAX['sms'][0]:,} (a hardware's "
                  f"SMs per GPU)")
    # what `mok tune --table` tunes with (it refuses --engine sim and --seed): a table that says
    # otherwise was made or edited elsewhere, and its choices are not the layer's
    engine, seed = doc.get("engine", "analytic"), doc.get("seed", 0)
    if engine != "analytic" or type(seed) is not int or seed != 0:
        raise bad(f"engine={engine!r}, seed={seed!r}: a knob table holds the analytic engine's "
                  f"choices at seed 0 (`mok tune --table`); rewrite it with its command")
    for k in SHAPE_KEYS:
        v, low = doc["shape"].get(k), 0 if k == "shared_width" else 1
        if isinstance(v, bool) or not isinstance(v, int) or v < low:
            raise bad(f"shape.{k}={v!r} must be an integer >= {low}")
    if table_routing(doc) != ROBUST:    # as `mok tune --table --routing` checks it
        try:
            parse_routing(table_routing(doc), doc["shape"]["top_k"])
        except MokInputError as exc:
            raise bad(str(exc)) from None
    if not doc["buckets"]:
        raise bad("no buckets")
    last = 0
    for i, b in enumerate(doc["buckets"]):
        if not isinstance(b, dict):
            raise bad(f"bucket {i} must be an object")
        n = b.get("tokens")
        if isinstance(n, bool) or not isinstance(n, int) or n <= last:
            raise bad(f"bucket {i}: tokens={n!r} must be an integer above the previous bucket's {last}")
        last = n
        cfg = b.get("config")
        if not isinstance(cfg, dict) or sorted(cfg) != sorted(KNOBS):
            raise bad(f"bucket {n}: config must name exactly the knobs {KNOBS}")
        try:
            Config(**cfg).check_sms(doc["sms"], doc["hardware"])   # on the table's hardware
        except MokInputError as exc:
            raise bad(f"bucket {n}: {exc}") from None
        ms = b.get("predicted_ms")
        if not _a_latency(ms):
            raise bad(f"bucket {n}: predicted_ms={ms!r} must be a time in [{LATENCY_MS[0]:g}, "
                      f"{LATENCY_MS[1]:g}] ms")
        lag = b.get("list_lag", 1)  # absent in tables written before the lag was chosen: 1
        if isinstance(lag, bool) or not isinstance(lag, int) or not 1 <= lag <= MAX_LIST_LAG:
            raise bad(f"bucket {n}: list_lag={lag!r} must be an integer from 1 to {MAX_LIST_LAG}")


_TABLES: dict[tuple, dict] = {}


def load_table(path: str | os.PathLike) -> dict:
    """Read and validate a knob table (cached by path, size and modification time)."""
    if not isinstance(path, (str, os.PathLike)) or str(path) == "":
        raise KnobTableError(f"knob table {path!r}: name a JSON file (`mok tune --table FILE.json`)")
    path = Path(path)
    if not path.is_file():
        raise KnobTableError(f"knob table {path}: no such file")
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    if key not in _TABLES:
        try:
            doc = loads_json(path.read_text(encoding="utf-8"))
        except UnicodeDecodeError as exc:
            raise KnobTableError(f"knob table {path}: not UTF-8 text (byte {exc.start}); a knob "
                                 f"table is JSON") from None
        except json.JSONDecodeError as exc:
            raise KnobTableError(f"knob table {path}: not JSON ({exc.msg}, line {exc.lineno})") from None
        _validate_table(doc, str(path))
        doc["_path"] = str(path)
        _TABLES[key] = doc
    return _TABLES[key]


def table_routing(doc: dict) -> str:
    """The routing a table's choices were made for ("uniform" in tables written before the field
    could say otherwise)."""
    return doc.get("routing", "uniform")


def table_bucket(doc: dict, tokens: int) -> dict:
    """The nearest bucket at or above `tokens`; refuses a token count above the last bucket."""
    for b in doc["buckets"]:
        if b["tokens"] >= tokens:
            return b
    top = doc["buckets"][-1]["tokens"]
    raise KnobTableError(f"knob table {doc['_path']}: {tokens} tokens is above its largest bucket "
                         f"({top}); write the table with a larger --tokens-buckets")


def _check_table_knobs(doc: dict, hw: Hardware | None, model: MoEModel, ep: int, tokens: int,
                       bucket: dict, knobs: dict, given: dict) -> None:
    """Refuse given knobs merged into a table bucket's as the tuner refuses them given without a
    table: the knob set (scenario.Config: a ring that holds a minibatch), comm SMs that leave
    compute SMs (Config.check_sms) and a given capacity that overflows at uniform routing (the
    tuner's rule, tuner.min_capacity, with the table's parameters or the hardware's own)."""
    where = (f"knob table {doc['_path']} bucket {bucket['tokens']} with "
             f"{', '.join(f'{k}={given[k]!r}' for k in KNOBS if k in given)} given")
    try:
        Config(**knobs).check_sms(hw.sms if hw is not None else doc["sms"],
                                  hw.name if hw is not None else doc["hardware"])
        if "capacity" not in given:
            return
        if hw is None:
            try:
                hw = load_hardware(doc["hardware"])
            except MokInputError:   # a hardware file's own name: no preset to read the rule from
                return
            if hw.sms != doc["sms"]:
                hw = dataclasses.replace(hw, sms=doc["sms"])
        kept = doc.get("params")
        params = _params(hw, kept if isinstance(kept, str) and os.path.isfile(kept) else None)
        from mok_model.tuner import min_capacity
        least = min_capacity(Scenario(hw, model, ep, tokens, "fwd", "bf16"), params)
        if knobs["capacity"] < least:
            use = "1 (every routed row)" if least >= 1 else f"{math.ceil(least * 1000) / 1000:g} to 1"
            raise MokInputError(f"capacity {knobs['capacity']!r} overflows: the schedule must hold "
                                f"{least:.3g} of the routed rows at uniform routing (x headroom "
                                f"{params['capacity_headroom']:g}); use capacity {use} or leave "
                                f"it to the table")
    except MokInputError as exc:
        raise MokInputError(f"{where}: {exc}") from None


def _table_choice(doc: dict, hw: Hardware | None, model: MoEModel, ep: int, tokens: int,
                  given: dict) -> Choice:
    where = f"knob table {doc['_path']}"
    if doc["pass"] != "fwd" or doc["precision"] != "bf16":
        raise KnobTableError(f"{where}: tuned for {doc['pass']} {doc['precision']}; the megakernel "
                             f"runs the bf16 forward")
    if hw is not None and doc["hardware"] != hw.name:
        raise KnobTableError(f"{where}: tuned for hardware {doc['hardware']!r}, this layer runs on "
                             f"{hw.name!r}")
    if hw is not None and doc["sms"] != hw.sms:
        raise KnobTableError(f"{where}: tuned for {doc['sms']} SMs per rank, this layer's ranks "
                             f"have {hw.sms}")
    if doc["shape"] != shape_of(model):
        raise KnobTableError(f"{where}: tuned for model {doc['model']!r} of shape {doc['shape']}, "
                             f"this layer's shape is {shape_of(model)}")
    if doc["ep"] != ep:
        raise KnobTableError(f"{where}: tuned for EP {doc['ep']}, this layer has EP {ep}")
    b = table_bucket(doc, tokens)
    knobs = {**b["config"], **given}
    if given:
        _check_table_knobs(doc, hw, model, ep, tokens, b, knobs, given)
    source = f"table {doc['_path']} bucket {b['tokens']}"
    safe = safe_capacity(ep, tokens, model.top_k, model.routed_experts)
    raised = "capacity" not in given and knobs["capacity"] < safe
    if raised:
        knobs["capacity"] = safe
        source += f"; capacity raised to {safe} (uniform and hot-expert bounds for {tokens} tokens)"
    if given:
        source += f"; given: {', '.join(k for k in KNOBS if k in given)}"
    # the bucket's prediction and lag hold for the bucket's own knobs and token count only
    mine = not (given or raised)
    return Choice(knobs, source, b["predicted_ms"] if mine else None,
                  b.get("list_lag", 1) if mine else 1)


# ---------------------------------------------------------------- MoKLayer's resolution

# GPU name fragment -> (preset with ranks emulated on one GPU, preset with one rank a GPU): the
# SXM parts the presets describe; the PCIe and NVL cards of the same names have other SM counts,
# memory rates or power limits, so they get none
GPU_PRESETS = {"H200": ("h200-1", "h200-hgx8"), "H100": ("h100-1", "h100-hgx8")}
OTHER_PARTS = ("PCIe", "NVL")


def preset_for_gpu(gpu_name: str, group_mode: bool, sms: int | None = None) -> str | None:
    """The hardware preset a GPU's runs are read against (GPU_PRESETS: emulated ranks, or real
    ranks one per GPU with group_mode), None for a GPU without one: another part, or (`sms`
    given) an SM count other than the preset's."""
    if any(part in gpu_name for part in OTHER_PARTS):
        return None
    for part, (one, group) in GPU_PRESETS.items():
        if part in gpu_name:
            preset = group if group_mode else one
            return preset if sms is None or load_hardware(preset).sms == sms else None
    return None


def hardware_for_gpu(gpu_name: str, group_mode: bool, sms: int | None = None) -> str:
    """preset_for_gpu, refusing a GPU without a preset (name one explicitly)."""
    preset = preset_for_gpu(gpu_name, group_mode, sms)
    if preset is not None:
        return preset
    raise MokInputError(f"GPU {gpu_name!r}" + (f" ({sms} SMs)" if sms else "")
                        + " has no hardware preset for choosing knobs (the presets describe the "
                        f"{' and '.join(GPU_PRESETS)} SXM parts); pass hardware=<preset> (with a "
                        f"knob table: the table's hardware), or set every knob")


def resolve_layer(layer: Any) -> tuple[Any, str]:
    """(KernelConfig with every knob set, knob source) for a MoKLayer whose weights and rank
    mode are known. Called once from MoKLayer.__post_init__."""
    cfg = layer.cfg
    given = {k: getattr(cfg, k) for k in KNOBS if getattr(cfg, k) is not None}
    group_mode = layer.group is not None and not getattr(layer, "local_group", False)
    # the lag is chosen only where it was tested and measured: BF16, ranks emulated or virtual
    # on one GPU without a group (GPU tests, calibration/runs/h200_drawn/lag_sweep.jsonl.gz)
    lag = cfg.list_lag or (1 if layer.group is not None or cfg.precision != "bf16" else None)
    if len(given) == len(KNOBS):
        return dataclasses.replace(cfg, list_lag=lag or 1), "given"
    hw = None
    if layer.hardware is not None:
        hw = _hardware(layer.hardware)
    else:
        import torch

        dev = torch.device(layer.device)
        if dev.type == "cuda" and torch.cuda.is_available():
            props = torch.cuda.get_device_properties(dev)
            hw = load_hardware(hardware_for_gpu(props.name, group_mode,
                                                props.multi_processor_count))
        elif layer.knob_table is None:
            raise MokInputError(f"knobs {[k for k in KNOBS if k not in given]} are unset and device "
                                f"{layer.device!r} is not a CUDA GPU to choose for; pass "
                                f"hardware=<preset> or knob_table=FILE, or set every knob")
    if hw is not None:  # SMs one rank's programs get: P launches or P virtual ranks share a GPU
        grid = cfg.grid or hw.sms
        if getattr(layer, "local_group", False) and not cfg.grid:
            grid //= layer.ep
        per_rank = grid // (layer.ep if layer.rank is None and not group_mode else 1)
        if per_rank < 8:
            raise MokInputError(f"{per_rank} programs per rank are too few to choose knobs for; "
                                f"set comm_sms and the other knobs")
        if per_rank != hw.sms:
            hw = hw.with_(sms=per_rank)
    w = layer.weights
    e, h, i = (int(x) for x in w.wg.shape)
    if layer.local_weights:
        e *= layer.ep
    shape = {"hidden": h, "expert_width": i, "routed_experts": e, "top_k": layer.topk,
             "shared_width": 0 if w.sg is None else int(w.sg.shape[1])}
    c = choose_knobs(hw, shape, layer.ep, layer.tokens, layer.knob_table, layer.knob_params, given,
                     cfg.precision, lag, cfg.knob_routing, layer.allow_params_mismatch)
    source = c.source + (f"; list_lag {c.list_lag}" if lag is None and c.list_lag != 1 else "")
    return dataclasses.replace(cfg, **c.knobs, list_lag=c.list_lag), source
