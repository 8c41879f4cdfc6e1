"""Session 72 (tried, not shipped): token_steps.py with a preset shape's GEMM time clipped between
the monotone times (monotone_in_work) of the table's points at that shape of less and of more
mechanism work, as a factor on the residual (so a transferred table's lookup takes it too).

    PYTHONPATH=. python mok_kernels/logs_s72/bracket_steps.py HARDWARE   (output: bracket_steps.txt)
"""
import runpy
import sys
from pathlib import Path

import numpy as np

import mok_model.gemm_table as G

looked_up = G.GemmTable.scenario_seconds
_shapes: dict = {}


def shape_times(table, shape):
    """(work, monotone times) of the source table's points at `shape`, or None."""
    key = (id(table), shape)
    if key not in _shapes:
        mech, pts = table.mechanism, [p for p in table.points
                                      if (p["expert_width"], p["hidden"], p["local_experts"]) == shape]
        launch = mech["launch_us"] * 1e-6
        if pts:
            meas = np.array([p["measured_ms"] for p in pts]) * 1e-3 - launch
            work = np.array(G.points_mechanism_seconds([p["mech"] for p in pts], mech)) - launch
            _shapes[key] = (work, G.monotone_in_work(tuple(pts), meas, work))
        else:
            _shapes[key] = None
    return _shapes[key]


def bracketed(self, scn, sms=None, scaling=1.0):
    out = looked_up(self, scn, sms, scaling)
    _, width, hidden, local = G.shape_of(scn)
    known = shape_times(self, (width, hidden, local))
    if known is None:
        return out
    work, times = known
    mech = self.mechanism   # the points' own mechanism: the residual is against it
    w = G.mechanism_seconds(G.phase_features(scn), mech) - mech["launch_us"] * 1e-6
    t = w * G._mechanism_inputs(self, scn)[1]
    below, above = times[work <= w], times[work >= w]
    lo = below.max() if len(below) else -np.inf
    hi = above.min() if len(above) else np.inf
    return out * float(np.clip(t, min(lo, hi), max(lo, hi))) / t


G.GemmTable.scenario_seconds = bracketed
runpy.run_path(str(Path(__file__).with_name("token_steps.py")), run_name="__main__")
sys.exit(0)
