"""Fit model parameters to run records: bounded least squares on relative error (scipy).

Records are read as scenarios by mok_model.records and scored in batches by
calibration.scoring; both are re-exported here for older callers.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import least_squares

from mok_model.errors import MokInputError
from mok_model.params import BOUNDS, Params
from mok_model.records import (  # noqa: F401  (re-exported: the record -> scenario reading)
    predictable, record_config, record_scenario, routing_spec, workload_key)

from .scoring import predict_record, predict_records, resolve_configs  # noqa: F401


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
