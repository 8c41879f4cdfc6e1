"""Validation metrics: per-record error, MAPE, max APE, and ranking quality (Spearman) across the
configurations of one workload; plus the predicted-vs-measured plot."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.stats import rankdata

from mok_model.errors import MokInputError
from mok_model.params import Params
from mok_model.records import predictable, workload_key
from mok_model.tuner import tie_rounded

from .scoring import predict_records


def spearman(x, y) -> float:
    """Spearman rank correlation of two equal-length sequences (average ranks for ties, values
    equal to tuner.TIE_DIGITS significant digits tied: mok_model.tuner.tie_rounded).

    nan when fewer than 3 points or when either side is constant (no ranking to compare).
    """
    x, y = tie_rounded(x), tie_rounded(y)
    if len(x) != len(y):
        raise ValueError("spearman needs sequences of equal length")
    if len(x) < 3:
        return math.nan
    rx, ry = rankdata(x), rankdata(y)
    if np.ptp(rx) == 0 or np.ptp(ry) == 0:
        return math.nan
    rx, ry = rx - rx.mean(), ry - ry.mean()
    return float((rx * ry).sum() / math.sqrt((rx * rx).sum() * (ry * ry).sum()))


def group_key(rec: dict) -> tuple:
    """The workload a record's configuration belongs to, plus its system: Spearman compares
    configurations within one such group."""
    return workload_key(rec) + (rec["system"],)


@dataclass
class Validation:
    n: int
    mape: float
    max_ape: float
    spearman: float | None  # mean over groups with >= 3 configurations; None when none has
    groups: int  # groups that entered the Spearman mean
    rows: list[dict]

    def as_json(self) -> dict:
        return {"n": self.n, "mape": self.mape, "max_ape": self.max_ape,
                "spearman": self.spearman, "rows": self.rows}


def grouped_spearman(records: list[dict], measured, predicted) -> tuple[float | None, int]:
    """Mean of the per-group Spearman correlations and how many groups entered it."""
    groups: dict[tuple, list[int]] = {}
    for i, rec in enumerate(records):
        groups.setdefault(group_key(rec), []).append(i)
    vals = [spearman(measured[ix], predicted[ix]) for ix in groups.values()]
    vals = [v for v in vals if not math.isnan(v)]
    return (float(np.mean(vals)) if vals else None), len(vals)


def evaluate(records: list[dict], measured, predicted) -> Validation:
    """Metrics of given predictions against the records' medians (APE as a fraction)."""
    measured, predicted = np.asarray(measured, float), np.asarray(predicted, float)
    ape = np.abs(predicted / measured - 1.0)
    rows = [{"id": r["id"], "measured_ms": float(m), "predicted_ms": float(p), "ape": float(a)}
            for r, m, p, a in zip(records, measured, predicted, ape)]
    rho, ng = grouped_spearman(records, measured, predicted)
    return Validation(len(records), float(ape.mean()) if len(ape) else math.nan,
                      float(ape.max()) if len(ape) else math.nan, rho, ng, rows)


def validate(records: list[dict], params: Params, engine: str = "analytic") -> Validation:
    """Predict every record with `params` and compare with its measured median. A record of a
    system the model does not predict (its prediction would be nan, and so every figure) is
    refused: callers keep the predictable ones (mok_model.records.predictable)."""
    bad = next((r for r in records if not predictable(r)), None)
    if bad is not None:
        raise MokInputError(f"record {bad.get('id')!r}: system {bad.get('system')!r} is not one the "
                            f"model predicts; validate the predictable records only")
    measured = np.array([r["latency_ms"]["median"] for r in records], float)
    return evaluate(records, measured, predict_records(records, params, engine))


def record_bands(records: list[dict], params: Params) -> list[tuple[float, float] | None]:
    """Each record's 90% band (mok_model.band: the pass re-predicted with the fit's sampled
    parameter vectors, analytic engine, at the record's own knobs), (lo, hi) in ms; None where
    there is none (a system the model does not predict, knobs infeasible under the samples)."""
    from mok_model.predict import predict
    from mok_model.records import predictable, record_config, record_scenario

    out: list[tuple[float, float] | None] = []
    for rec in records:
        if not predictable(rec):
            out.append(None)
            continue
        system, cfg = rec["system"], record_config(rec)
        b = predict(record_scenario(rec), cfg if system == "mok" else None, system, params,
                    refuse_overflow=False).with_band(params).band
        out.append(None if b.lo is None else (b.lo, b.hi))
    return out


def knob_value(rec: dict, knob: str):
    """A record's value of a knob (or of a top-level field such as tokens or model)."""
    if knob in (rec.get("config") or {}):
        return rec["config"][knob]
    v = rec.get(knob)
    if isinstance(v, dict):
        return v.get("name", str(sorted(v.items())))
    return v


def error_by(records: list[dict], v: Validation, key: str) -> dict[str, tuple[float, float, int]]:
    """Mean signed relative error, MAPE and count of the rows per value of a knob or field."""
    groups: dict[str, list[float]] = {}
    for rec, row in zip(records, v.rows):
        groups.setdefault(str(knob_value(rec, key)), []).append(row["predicted_ms"] / row["measured_ms"] - 1)
    order = sorted(groups, key=lambda s: (len(s), s))
    return {k: (float(np.mean(groups[k])), float(np.mean(np.abs(groups[k]))), len(groups[k]))
            for k in order}


def plot(records: list[dict], v: Validation, path: str, color_by: str = "minibatch",
         title: str = "", bands: list | None = None) -> None:
    """Predicted vs measured on log axes, points coloured by a knob, y = x and +-10% lines;
    `bands` (record_bands) drawn as vertical bars through the points."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    meas = np.array([r["measured_ms"] for r in v.rows])
    pred = np.array([r["predicted_ms"] for r in v.rows])
    labels = [knob_value(r, color_by) for r in records]
    fig, ax = plt.subplots(figsize=(6.4, 5.6))
    keys = sorted({str(x) for x in labels}, key=lambda s: (len(s), s))
    cmap = plt.get_cmap("viridis" if len(keys) > 10 else "tab10")
    for j, key in enumerate(keys):
        ix = [i for i, x in enumerate(labels) if str(x) == key]
        c = cmap(j / max(len(keys) - 1, 1)) if len(keys) > 10 else cmap(j % 10)
        ax.scatter(meas[ix], pred[ix], s=18, color=c, label=f"{color_by}={key}", alpha=0.85)
    if bands is not None:
        ix = [i for i, b in enumerate(bands) if b is not None]
        lo_b = np.array([bands[i][0] for i in ix])
        hi_b = np.array([bands[i][1] for i in ix])
        ax.errorbar(meas[ix], pred[ix], yerr=[np.maximum(pred[ix] - lo_b, 0),
                                              np.maximum(hi_b - pred[ix], 0)],
                    fmt="none", ecolor="0.35", elinewidth=0.7, alpha=0.7, zorder=1,
                    label="90% band (fit)")
    lo = min(meas.min(), pred.min()) * 0.8
    hi = max(meas.max(), pred.max()) * 1.25
    xs = np.array([lo, hi])
    ax.plot(xs, xs, "k-", lw=1, label="predicted = measured")
    ax.plot(xs, xs * 1.1, "k:", lw=0.8, label="+-10%")
    ax.plot(xs, xs / 1.1, "k:", lw=0.8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    from matplotlib.ticker import LogLocator, ScalarFormatter

    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        axis.set_major_formatter(ScalarFormatter())
        axis.set_minor_formatter(ScalarFormatter() if hi / lo < 4 else plt.NullFormatter())
    ax.set_xlabel("measured latency (ms)")
    ax.set_ylabel("predicted latency (ms)")
    rho = "n/a" if v.spearman is None else f"{v.spearman:.3f}"
    ax.set_title(title or f"n={v.n}  MAPE {100 * v.mape:.1f}%  max {100 * v.max_ape:.1f}%  "
                          f"Spearman {rho}", fontsize=10)
    ax.legend(fontsize=7, loc="upper left", ncol=1 if len(keys) < 12 else 2)
    fig.tight_layout()
    from mok_model.fileio import atomic_path

    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=120, format="png")
    plt.close(fig)
