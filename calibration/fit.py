"""Fit model parameters to run records: bounded least squares on relative error (scipy), and
the fitted parameters' uncertainty (a bootstrap over whole workloads).

Records are read as scenarios by mok_model.records and scored in batches by
calibration.scoring; both are re-exported here for older callers.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import least_squares, lsq_linear

from mok_model.errors import MokInputError
from mok_model.params import BOUNDS, Params
from mok_model.records import (  # noqa: F401  (re-exported: the record -> scenario reading)
    predictable, record_config, record_scenario, routing_spec, workload_key)

from .scoring import predict_record, predict_records, resolve_configs  # noqa: F401

# How fit() estimates the parameters' uncertainty (`mok calibrate --band`): "bootstrap" refits
# (bounded, nonlinear) to resamples of whole workloads; "linear" solves each resample's bounded
# least squares linearized at the optimum (one Jacobian: fast, first order); "none" skips it.
BANDS = {"bootstrap": "bootstrap", "linear": "bootstrap-linear", "none": None}
BAND_SAMPLES = 50
BAND_SEED = 0


@dataclass
class FitResult:
    params: Params
    residuals: list[dict]  # per record: id, measured, predicted, relative error
    cost: float
    uncertainty: dict | None = None  # the parameters file's "uncertainty" block, when estimated
    notes: list[str] = field(default_factory=list)


def fit(records: list[dict], base: Params, free: list[str], engine: str = "analytic",
        max_nfev: int = 200, rounds: int = 6, band: str = "none", band_samples: int = BAND_SAMPLES,
        band_seed: int = BAND_SEED, weights: list[float] | None = None) -> FitResult:
    """Fit the `free` parameters to the records' median latencies (relative error, bounded).

    `weights`: one per record (default 1 each), multiplying each record's squared relative
    error in the cost (e.g. 1/2 for each of two readings of one measured row); the residuals
    reported are unweighted.

    With band "bootstrap" or "linear", also sample the fitted parameters' uncertainty
    (estimate_uncertainty); the result's params carry the block. The fitted values do not
    depend on it."""
    if band not in BANDS:
        raise MokInputError(f"--band {band!r} must be one of {', '.join(BANDS)}")
    if weights is not None:
        if len(weights) != len(records) or any(not np.isfinite(w) or w <= 0 for w in weights):
            raise MokInputError(f"weights: {len(weights)} given for {len(records)} records, each "
                                f"must be a finite number > 0")
        weights = [w for r, w in zip(records, weights) if predictable(r)]
    records = [r for r in records if predictable(r)]
    if not records:
        raise MokInputError("no records of a modelled system to fit")
    unknown = [f for f in free if f not in BOUNDS]
    if unknown:
        raise MokInputError(f"cannot fit unknown parameters {unknown}; known: {sorted(BOUNDS)}")
    measured = np.array([r["latency_ms"]["median"] for r in records])
    sw = np.sqrt(np.asarray(weights if weights is not None else [1.0] * len(records), float))
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

    def weighted(x, resolved=None):
        return sw * residual(x, resolved)

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
            sol = least_squares(weighted, x, bounds=(lo / scale, hi / scale), diff_step=1e-3,
                                max_nfev=max_nfev, args=(resolved,))
            x, cost = sol.x, float(sol.cost)
        if not open_knobs:
            break
        again = tuned(x)
        if again == resolved:
            break
        resolved = again
    if not free:
        cost = float(0.5 * np.sum(weighted(x) ** 2))
    values = dict(zip(free, (x * scale).tolist()))
    p = base.with_values(**values)
    res = residual(x)  # final scores with the tuner choosing under the fitted parameters
    rows = [{"id": r["id"], "measured_ms": float(m), "predicted_ms": float(m * (1 + e)),
             "rel_error": float(e)} for r, m, e in zip(records, measured, res)]
    block, notes = None, []
    if BANDS[band] and free:
        def scored(x, keep):  # relative errors of the records `keep`, knobs as the fit left them
            sub = [records[i] for i in keep]
            q = base.with_values(**dict(zip(free, (x * scale).tolist())))
            pred = predict_records(sub, q, engine, [resolved[i] for i in keep] if resolved else None)
            return sw[keep] * np.where(np.isfinite(pred), pred / measured[keep] - 1.0, 10.0)

        # `resolved` is already the tuner's choice at the final x: the loop above ends with it
        block, notes = estimate_uncertainty(records, scored, x, lo / scale, hi / scale, scale, free,
                                            BANDS[band], band_samples, band_seed, max_nfev)
        if block is not None:
            block["engine"] = engine
            p = Params(p.values, p.hardware, None, p.fitted_on, p.sources, block, p.filled,
                       p.gemm_table)
    return FitResult(p, rows, cost, block, notes)


def estimate_uncertainty(records: list[dict], scored, x: np.ndarray, lo: np.ndarray,
                         hi: np.ndarray, scale: np.ndarray, free: list[str], method: str,
                         n: int, seed: int, max_nfev: int = 200) -> tuple[dict | None, list[str]]:
    """Sample the fitted parameters by a bootstrap over whole workloads.

    A workload (hardware, model, EP, tokens, pass, precision, routing and its seed) is the unit
    that is resampled: its records share the routing draw and the shape, so their errors are not
    independent. The draw is stratified by pass and precision: each of `n` replicates draws, in
    each stratum, as many of its workloads as it has, with replacement (numpy's
    default_rng(seed), strata in sorted order: the same records and seed give the same
    samples), and weights each record by how often its workload was drawn. Unstratified, a
    replicate without any backward workload left a backward-only parameter
    (wgrad_bytes_per_weight) free to run to either bound, which no measurement says (session
    71). "bootstrap" refits the weighted bounded
    least squares from the optimum `x` (so a parameter at its bound stays within it and its
    samples show the one-sided spread); "bootstrap-linear" solves the same problem linearized
    at `x` (one Jacobian, then a bounded linear least squares per replicate). Knobs the
    records leave open stay at the tuner's choice under the fitted values; every parameter not
    in `free` stays at its value. `scored(x, keep)` returns the relative errors of records
    `keep` at scaled parameters `x`; `lo`, `hi` are the scaled bounds.

    Returns the parameters file's "uncertainty" block (None when it cannot be estimated) and
    notes saying why not.
    """
    keys = [workload_key(r) for r in records]
    groups = list(dict.fromkeys(keys))  # in the records' order: deterministic
    G = len(groups)
    if G < 2:
        return None, [f"no uncertainty band: the {len(records)} records are one workload, and "
                      f"resampling workloads needs at least two"]
    if n < 2:
        raise MokInputError(f"--band-samples {n} must be >= 2")
    of = {k: i for i, k in enumerate(groups)}
    gi = np.array([of[k] for k in keys])
    everything = np.arange(len(records))
    stratum = {}   # workload index -> (pass, precision) of its records
    for r, g in zip(records, gi):
        stratum[int(g)] = (r.get("pass", "fwd"), r.get("precision", "bf16"))
    strata = [np.array([g for g in range(G) if stratum[g] == s]) for s in sorted(set(stratum.values()))]
    rng = np.random.default_rng(seed)

    def draw() -> np.ndarray:   # how often each workload is drawn, stratum by stratum
        counts = np.zeros(G, dtype=np.int64)
        for members in strata:
            np.add.at(counts, members[rng.integers(0, len(members), len(members))], 1)
        return counts

    draws = [draw()[gi] for _ in range(n)]
    x = np.clip(x, lo, hi)
    samples = []
    if method == "bootstrap-linear":
        r0 = scored(x, everything)
        jac = np.empty((len(r0), len(x)))
        for j in range(len(x)):  # forward differences, stepping inward at an upper bound
            h = 1e-3 * max(abs(x[j]), 1.0)
            h = -h if x[j] + h > hi[j] else h
            step = x.copy()
            step[j] += h
            jac[:, j] = (scored(step, everything) - r0) / h
        for w in draws:
            sw = np.sqrt(w)
            sol = lsq_linear(sw[:, None] * jac, -sw * r0, bounds=(lo - x, hi - x))
            samples.append(np.clip(x + sol.x, lo, hi))
    else:
        for w in draws:
            keep = np.flatnonzero(w)
            sw = np.sqrt(w[keep])
            sol = least_squares(lambda z, keep=keep, sw=sw: sw * scored(z, keep), x,
                                bounds=(lo, hi), diff_step=1e-3, max_nfev=max_nfev,
                                ftol=1e-6, xtol=1e-6)
            samples.append(np.clip(sol.x, lo, hi))
    bounds = np.array([BOUNDS[f] for f in free], float)  # unscaled: no rounding past a bound
    vals = np.clip(np.array(samples) * scale, bounds[:, 0], bounds[:, 1])
    fitted = x * scale
    summary = {f: {"value": float(v), "p05": float(np.percentile(col, 5)),
                   "p50": float(np.percentile(col, 50)), "p95": float(np.percentile(col, 95))}
               for f, v, col in zip(free, fitted, vals.T)}
    block = {"method": method, "resample": "workloads within pass and precision", "seed": int(seed),
             "n": int(n), "groups": G, "strata": len(strata), "records": len(records), "free": list(free),
             "held": "every other value at this file's value (priors and microbenchmark fits "
                     "included); knobs the records leave open at the tuner's choice under the "
                     "fitted values",
             "summary": summary, "samples": [[float(v) for v in row] for row in vals]}
    return block, []
