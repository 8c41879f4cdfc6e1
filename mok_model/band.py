"""The uncertainty band of a prediction: the same pass re-predicted with every parameter vector
the fit sampled (the parameters file's "uncertainty" block, written by calibration/fit.py).

The band is the fit's parameter uncertainty: how far the prediction moves when the parameters
are refitted to resampled workloads. It is not the model's error on workloads unlike the fitted
ones (docs/calibration.md reports that held out). Knobs stay where the point prediction put them.
Analytic engine only: one simulation per sample would cost 50 simulations.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .errors import MokInputError
from .params import Params

LEVEL = 0.9  # the band's central share of the resampled predictions


@dataclass(frozen=True)
class Band:
    """lo/hi in ms (None when there is no band), and a sentence for the reader."""

    lo: float | None
    hi: float | None
    level: float
    method: str | None
    n: int
    params: str | None
    note: str  # why there is no band, or what the band is
    caveats: tuple[str, ...] = ()  # what changes how this band reads (zero width, widened, ...)

    @property
    def full_note(self) -> str:
        """The --json "band_note": the note, then the caveats."""
        return "; ".join((self.note,) + self.caveats)

    def as_json(self) -> dict | None:
        """The --json "band_ms" field: null when there is no band."""
        if self.lo is None:
            return None
        return {"lo": self.lo, "hi": self.hi, "level": self.level, "method": self.method,
                "n": self.n, "params": self.params}

    def text(self) -> str:
        """For the latency line: '90% band A-B ms from the fit of FILE' or 'no band: why'."""
        if self.lo is None:
            return self.note
        return (f"{self.level:.0%} band {self.lo:.3f}-{self.hi:.3f} ms from the fit of "
                f"{self.params}")


def shown_path(path: str | None) -> str | None:
    """A parameters file's path as the reader would type it: relative to the repository root
    when it lies inside it, else as given."""
    if path is None:
        return None
    root = Path(__file__).resolve().parents[1]
    try:
        return str(Path(path).resolve().relative_to(root))
    except ValueError:
        return path


def no_band(params: Params | None, engine: str = "analytic") -> str | None:
    """Why a prediction with these parameters has no band (None when it can have one)."""
    if engine != "analytic":
        return ("no band: bands are computed by the analytic engine only (`mok predict`); one "
                "simulation per parameter sample would be too slow")
    if params is not None and params.uncertainty is not None:
        return None
    if params is None or not params.fitted_on:
        return "no band: parameters are priors (not fitted to any records)"
    where = shown_path(params.path) or "these parameters"
    return (f"no band: no uncertainty block in {where} (fitted before bands, with "
            f"`--band none`, or changed after the fit); refit with `mok calibrate` to add one")


def band(pred, params: Params, level: float = LEVEL) -> Band:
    """The band of a Prediction (mok_model.predict) made with `params`: the central `level` of
    the latencies re-predicted with each sampled parameter vector, widened to contain the point
    prediction where they all fall on one side of it (a parameter at its bound)."""
    from .predict import analytic_baseline, analytic_mok

    if not 0 < level < 1:
        raise MokInputError(f"band level {level} must be in (0, 1)")
    why = no_band(params, pred.engine)
    if why:
        return Band(None, None, level, None, 0, shown_path(params.path if params else None), why)
    u = params.uncertainty
    lat = []
    for q in params.samples():
        try:
            r = (analytic_mok(pred.scenario, pred.config, q) if pred.system == "mok"
                 else analytic_baseline(pred.scenario, pred.system, q))
            lat.append(r.latency_ms)
        except MokInputError:  # a sample under which the knobs overflow the schedule
            lat.append(math.inf)
    lat = np.array(lat)
    finite = lat[np.isfinite(lat)]
    where = shown_path(params.path)
    if len(finite) < 2:
        return Band(None, None, level, u["method"], len(finite), where,
                    "no band: the knobs are infeasible under most sampled parameter vectors")
    tail = 50 * (1 - level)
    lo, hi = np.percentile(finite, [tail, 100 - tail])
    point = pred.latency_ms
    note = (f"{level:.0%} of the latencies re-predicted with the {len(finite)} parameter vectors "
            f"of a {u['method']} over {u.get('groups', '?')} workloads (refitted: "
            f"{', '.join(u['free'])}; knobs and other values held): the fit's uncertainty, not "
            f"the model's error on unseen workloads")
    notes = []
    if len(finite) < len(lat):
        notes.append(f"{len(lat) - len(finite)} sampled vectors make these knobs infeasible and "
                     f"were left out")
    if hi - lo <= 1e-9 * point:
        notes.append(f"zero width: none of the fitted parameters {u['free']} changes this "
                     f"prediction; the values it uses are priors or held fits")
    elif point < lo or point > hi:
        notes.append("widened to contain the point prediction: the resampled predictions lie on "
                     "one side of it")
    if u.get("transferred_from"):
        cols = u.get("transferred_columns")
        which = "the samples" if cols is None else f"the samples of {', '.join(cols)}"
        notes.append(f"{which} come from the {u['transferred_from']} fit, transferred with "
                     f"its values; the transfer's own error is not in the band")
    return Band(float(min(lo, point)), float(max(hi, point)), level, u["method"], len(finite),
                where, note, tuple(notes))
