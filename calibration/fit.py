"""Fit model parameters to run records: bounded least squares on relative error (scipy)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import least_squares

from mok_model.errors import MokInputError
from mok_model.params import BOUNDS, Params
from mok_model.predict import predict
from mok_model.presets import load_hardware, load_model
from mok_model.scenario import Config, Scenario


def record_scenario(rec: dict) -> Scenario:
    """The Scenario a run record measured."""
    m = rec["model"]
    if isinstance(m, dict):
        model = load_model("kimi-k2").with_(**{k: v for k, v in m.items() if k != "name"},
                                            name=m.get("name", "custom"))
    else:
        model = load_model(m)
    routing = rec["routing"]
    spec = routing.get("kind", "uniform")
    if spec in ("zipf", "hot"):
        spec = f"{spec}:{routing['arg']}"
    return Scenario(load_hardware(rec["hardware"]["preset"]), model, rec["ep"], rec["tokens"],
                    rec["pass"], rec["precision"], spec, int(routing.get("seed", 0)))


def record_config(rec: dict) -> Config | dict:
    """A full Config when the record names every knob, else the knobs it names (tuner fills)."""
    cfg = rec.get("config") or {}
    if all(k in cfg for k in ("dispatch", "combine", "minibatch", "comm_sms", "macrobatch", "capacity")):
        return Config(**{k: cfg[k] for k in ("dispatch", "combine", "minibatch", "comm_sms",
                                             "macrobatch", "capacity")})
    return dict(cfg)


def predict_record(rec: dict, params: Params, engine: str = "analytic") -> float:
    """Predicted latency (ms) of the run a record describes."""
    scn = record_scenario(rec)
    return predict(scn, record_config(rec), rec["system"], params, engine).latency_ms


@dataclass
class FitResult:
    params: Params
    residuals: list[dict]  # per record: id, measured, predicted, relative error
    cost: float


def fit(records: list[dict], base: Params, free: list[str], engine: str = "analytic") -> FitResult:
    """Fit the `free` parameters to the records' median latencies (relative error, bounded)."""
    if not records:
        raise MokInputError("no records to fit")
    unknown = [f for f in free if f not in BOUNDS]
    if unknown:
        raise MokInputError(f"cannot fit unknown parameters {unknown}")
    measured = np.array([r["latency_ms"]["median"] for r in records])
    lo = np.array([BOUNDS[f][0] for f in free], float)
    hi = np.array([BOUNDS[f][1] for f in free], float)
    x0 = np.clip([base[f] for f in free], lo, hi)
    scale = np.maximum(np.abs(x0), 1e-3)

    def residual(x):
        p = base.with_values(**dict(zip(free, (x * scale).tolist())))
        pred = np.array([predict_record(r, p, engine) for r in records])
        return np.where(np.isfinite(pred), pred / measured - 1.0, 10.0)

    sol = least_squares(residual, x0 / scale, bounds=(lo / scale, hi / scale), diff_step=1e-3,
                        max_nfev=200)
    values = dict(zip(free, (sol.x * scale).tolist()))
    p = base.with_values(**values)
    res = residual(sol.x)
    rows = [{"id": r["id"], "measured_ms": float(m), "predicted_ms": float(m * (1 + e)),
             "rel_error": float(e)} for r, m, e in zip(records, measured, res)]
    return FitResult(p, rows, float(sol.cost))
