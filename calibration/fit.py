"""Fit model parameters to run records: bounded least squares on relative error (scipy).

Prediction of many records is batched: records that share a workload (hardware, model, EP,
tokens, pass, precision, routing) and name every knob are scored in one vectorized call of the
analytic model; the tuner runs only for records whose config is incomplete.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy.optimize import least_squares

from mok_model.analytic import mok_terms
from mok_model.errors import MokInputError
from mok_model.params import BOUNDS, Params
from mok_model.predict import predict
from mok_model.presets import load_hardware, load_model, model_from_shape
from mok_model.records import KNOBS
from mok_model.scenario import SYSTEMS, Config, Scenario
from mok_model.tuner import tune


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
        top_k = _model(_model_key(rec)).top_k
        return f"hot:{frac / top_k:.6g}"
    if kind == "file":
        return str(routing.get("arg", routing.get("path")))
    raise MokInputError(f"routing kind {kind!r} is not one of uniform, zipf, hot, onehot, file")


def _model_key(rec: dict) -> str:
    m = rec["model"]
    return json.dumps(m, sort_keys=True) if isinstance(m, dict) else m


@lru_cache(maxsize=256)
def _model(key: str):
    if key.startswith("{"):
        return model_from_shape(json.loads(key))
    return load_model(key)


@lru_cache(maxsize=1024)
def _scenario(hw: str, model: str, ep: int, tokens: int, pass_: str, precision: str,
              routing: str, seed: int) -> Scenario:
    return Scenario(load_hardware(hw), _model(model), ep, tokens, pass_, precision, routing, seed)


def workload_key(rec: dict) -> tuple:
    """What a record measured, without the knobs: records with equal keys share a Scenario."""
    return (rec["hardware"]["preset"], _model_key(rec), rec["ep"], rec["tokens"], rec["pass"],
            rec["precision"], routing_spec(rec), int(rec["routing"].get("seed", 0)))


def record_scenario(rec: dict) -> Scenario:
    """The Scenario a run record measured."""
    return _scenario(*workload_key(rec))


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
    """Whether the model predicts this record's system (microbenchmarks and kernel-only systems
    such as torch-grouped or gemm-only are not MoE layer systems the model knows)."""
    return rec["system"] in SYSTEMS


def predict_record(rec: dict, params: Params, engine: str = "analytic") -> float:
    """Predicted latency (ms) of the run a record describes."""
    return float(predict_records([rec], params, engine)[0])


def resolve_configs(records: list[dict], params: Params) -> list[Config | None]:
    """The tuner's config (under `params`) for each MoK record that leaves knobs open, else None."""
    out: list[Config | None] = []
    for rec in records:
        cfg = record_config(rec) if predictable(rec) and rec["system"] == "mok" else None
        if isinstance(cfg, dict):
            out.append(tune(record_scenario(rec), params, fixed=cfg, top=1).best.config)
        else:
            out.append(None)
    return out


def predict_records(records: list[dict], params: Params, engine: str = "analytic",
                    resolved: list[Config | None] | None = None) -> np.ndarray:
    """Predicted latency (ms) of every record, batched per workload (nan: system not modelled).

    A run that happened did not overflow its schedule, so a full-config MoK record is scored
    without the model's capacity-headroom refusal (the tuner keeps that rule for its choices).
    `resolved` (from resolve_configs) fixes the knobs the records leave open; without it the
    tuner chooses them under `params`.
    """
    out = np.full(len(records), np.nan)
    batches: dict[tuple, list[tuple[int, Config]]] = {}
    for i, rec in enumerate(records):
        if not predictable(rec):
            continue
        try:
            scn = record_scenario(rec)
            cfg = record_config(rec)
            if resolved is not None and resolved[i] is not None:
                cfg = resolved[i]
            if rec["system"] == "mok" and isinstance(cfg, Config) and engine == "analytic":
                cfg.check_for(scn)
                batches.setdefault(workload_key(rec), []).append((i, cfg))
            else:
                system = rec["system"]
                out[i] = predict(scn, cfg if system == "mok" else None, system, params,
                                 engine).latency_ms
        except MokInputError as exc:  # name the record that the model cannot take
            where = f"{rec['_file']}:{rec['_line']}" if "_file" in rec else f"record {rec['id']!r}"
            raise MokInputError(f"{where}: {exc}") from None
    for key, items in batches.items():
        scn = _scenario(*key)
        cfgs = [c for _, c in items]
        r = mok_terms(scn, params,
                      np.array([c.dispatch == "push" for c in cfgs]),
                      np.array([c.combine == "push" for c in cfgs]),
                      np.array([c.minibatch for c in cfgs]), np.array([c.comm_sms for c in cfgs]),
                      np.array([c.macrobatch for c in cfgs]), np.array([c.capacity for c in cfgs]))
        total = sum(np.asarray(v, float) for v in r["terms"].values()) * 1e3
        for (i, _), v in zip(items, total):
            out[i] = v
    return out


@dataclass
class FitResult:
    params: Params
    residuals: list[dict]  # per record: id, measured, predicted, relative error
    cost: float


def fit(records: list[dict], base: Params, free: list[str], engine: str = "analytic",
        max_nfev: int = 200, rounds: int = 6) -> FitResult:
    """Fit the `free` parameters to the records' median latencies (relative error, bounded)."""
    records = [r for r in records if predictable(r)]
    if not records:
        raise MokInputError("no records of a modelled system to fit")
    unknown = [f for f in free if f not in BOUNDS]
    if unknown:
        raise MokInputError(f"cannot fit unknown parameters {unknown}; known: {sorted(BOUNDS)}")
    measured = np.array([r["latency_ms"]["median"] for r in records])
    lo = np.array([BOUNDS[f][0] for f in free], float)
    hi = np.array([BOUNDS[f][1] for f in free], float)
    x0 = np.clip([base[f] for f in free], lo, hi)
    scale = np.maximum(np.abs(x0), 1e-3)
    # a parameter whose prior is 0 gets a scale from its range, so steps are meaningful
    scale = np.where(np.abs(x0) < 1e-9, np.maximum((hi - lo) * 0.01, 1e-3), scale)

    def residual(x, resolved=None):
        p = base.with_values(**dict(zip(free, (x * scale).tolist())))
        pred = predict_records(records, p, engine, resolved)
        return np.where(np.isfinite(pred), pred / measured - 1.0, 10.0)

    # Records without full knobs are scored at the tuner's choice, which is piecewise constant
    # in the parameters: fit with the choice held fixed, re-tune under the new parameters, and
    # repeat until the choice no longer changes (a fixed point; usually two or three rounds).
    x, cost = x0 / scale, 0.0
    open_knobs = engine == "analytic" and any(
        r["system"] == "mok" and isinstance(record_config(r), dict) for r in records)
    def tuned(x):
        return resolve_configs(records, base.with_values(**dict(zip(free, (x * scale).tolist()))))

    resolved = tuned(x) if open_knobs else None
    for _ in range(rounds if open_knobs else 1):
        if free:
            sol = least_squares(residual, x, bounds=(lo / scale, hi / scale), diff_step=1e-3,
                                max_nfev=max_nfev, args=(resolved,))
            x, cost = sol.x, float(sol.cost)
        if not open_knobs:
            break
        again = tuned(x)
        if again == resolved:
            break
        resolved = again
    if not free:
        cost = float(0.5 * np.sum(residual(x) ** 2))
    values = dict(zip(free, (x * scale).tolist()))
    p = base.with_values(**values)
    res = residual(x)  # final scores with the tuner choosing under the fitted parameters
    rows = [{"id": r["id"], "measured_ms": float(m), "predicted_ms": float(m * (1 + e)),
             "rel_error": float(e)} for r, m, e in zip(records, measured, res)]
    return FitResult(p, rows, cost)
