"""Session 72: leave-one-workload-out within each shape of the shipped h200-1 GEMM table: the
residual (measured / mechanism, both less the launch) read in log2 rows per active expert (the
table's axis) or in log2 of the mechanism's time, with and without monotone_in_work; then the
rows axis with the time bracketed by the shape's other points of less and of more work (their
monotone times), and the rows axis with each point's curve made of its own routing kind's points
where the shape has two or more: candidates for the token steps the monotone table leaves.

    PYTHONPATH=. python mok_kernels/logs_s72/loo_axis.py   (output: loo_axis.txt)
"""
import math

import numpy as np

from mok_model import gemm_table as G
from mok_model.params import load_params

table = load_params(None, "h200-1").gemm_table
pts, mech = table.points, table.mechanism
launch = mech["launch_us"] * 1e-6
meas = np.array([p["measured_ms"] for p in pts]) * 1e-3 - launch
work = np.array(G.points_mechanism_seconds([p["mech"] for p in pts], mech)) - launch
rows = np.array([p["rows_per_expert"] for p in pts])
by_shape: dict[tuple, list[int]] = {}
for i, p in enumerate(pts):
    by_shape.setdefault((p["expert_width"], p["hidden"], p["local_experts"]), []).append(i)


def workload(i: int) -> tuple:
    p = pts[i]
    return p["model"], p["ep"], p["tokens"], p["routing"]


def curve(idx: list[int], axis: np.ndarray, monotone: bool) -> tuple[np.ndarray, np.ndarray]:
    """A shape's curve from points `idx` as curves_of makes it, on `axis`."""
    idx = np.array(idx)
    m = G.monotone_in_work(tuple(pts[i] for i in idx), meas[idx], work[idx]) if monotone else meas[idx]
    at: dict[float, list[float]] = {}
    for x, v in zip(np.log2(axis[idx]), m / work[idx]):
        at.setdefault(float(x), []).append(float(v))
    xs = sorted(at)
    ys = np.array([np.mean(at[x]) for x in xs])
    if len(ys) >= 3:
        ys[1:-1] = np.sort(np.stack([ys[:-2], ys[1:-1], ys[2:]]), axis=0)[1]
    return np.array(xs), ys


for name, axis in (("rows", rows), ("work", work)):
    for monotone in (False, True):
        errs = []
        for idx in by_shape.values():
            if len(idx) < 4:
                continue
            for i in idx:
                xs, ys = curve([j for j in idx if workload(j) != workload(i)], axis, monotone)
                errs.append(np.interp(math.log2(axis[i]), xs, ys) * work[i] / meas[i] - 1)
        e = np.abs(errs)
        print(f"axis {name:4s} iso {monotone!s:5s}: n {len(e)} MAPE {100 * e.mean():.2f}% "
              f"p90 {100 * np.quantile(e, 0.9):.1f}% max {100 * e.max():.0f}%")


errs = []
for idx in by_shape.values():
    if len(idx) < 4:
        continue
    for i in idx:
        rest = np.array([j for j in idx if workload(j) != workload(i)])
        xs, ys = curve(list(rest), rows, True)
        t = np.interp(math.log2(rows[i]), xs, ys) * work[i]
        fit = G.monotone_in_work(tuple(pts[j] for j in rest), meas[rest], work[rest])
        below, above = fit[work[rest] <= work[i]], fit[work[rest] >= work[i]]
        lo = below.max() if len(below) else -np.inf
        hi = above.min() if len(above) else np.inf
        errs.append(float(np.clip(t, min(lo, hi), max(lo, hi))) / meas[i] - 1)
e = np.abs(errs)
print(f"axis rows iso True  bracketed: n {len(e)} MAPE {100 * e.mean():.2f}% "
      f"p90 {100 * np.quantile(e, 0.9):.1f}% max {100 * e.max():.0f}%")

errs = []
for idx in by_shape.values():
    if len(idx) < 4:
        continue
    for i in idx:
        rest = [j for j in idx if workload(j) != workload(i)]
        same = [j for j in rest if workload(j)[3].split(":")[0] == workload(i)[3].split(":")[0]]
        xs, ys = curve(same if len(same) >= 2 else rest, rows, True)
        errs.append(np.interp(math.log2(rows[i]), xs, ys) * work[i] / meas[i] - 1)
e = np.abs(errs)
print(f"axis rows iso True  own routing: n {len(e)} MAPE {100 * e.mean():.2f}% "
      f"p90 {100 * np.quantile(e, 0.9):.1f}% max {100 * e.max():.0f}%")
