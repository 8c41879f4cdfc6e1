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


def left_out(label: str, predict) -> None:
    """Each point of a shape of 4+ predicted by `predict(i, rest)` (seconds, less the launch)
    from its shape's points of other workloads; MAPE, p90 and max printed under `label`."""
    errs = []
    for idx in by_shape.values():
        if len(idx) < 4:
            continue
        for i in idx:
            rest = [j for j in idx if workload(j) != workload(i)]
            errs.append(predict(i, rest) / meas[i] - 1)
    e = np.abs(errs)
    print(f"axis {label}: n {len(e)} MAPE {100 * e.mean():.2f}% "
          f"p90 {100 * np.quantile(e, 0.9):.1f}% max {100 * e.max():.0f}%")


def read(i: int, rest: list[int], axis: np.ndarray = rows, monotone: bool = True) -> float:
    """Point i's time read off the curve of `rest` on `axis`."""
    xs, ys = curve(rest, axis, monotone)
    return float(np.interp(math.log2(axis[i]), xs, ys)) * work[i]


def bracketed(i: int, rest: list[int]) -> float:
    """read(), clipped between the monotone times of rest's points of less and of more work."""
    r = np.array(rest)
    fit = G.monotone_in_work(tuple(pts[j] for j in r), meas[r], work[r])
    below, above = fit[work[r] <= work[i]], fit[work[r] >= work[i]]
    lo = below.max() if len(below) else -np.inf
    hi = above.min() if len(above) else np.inf
    return float(np.clip(read(i, rest), min(lo, hi), max(lo, hi)))


def own_routing(i: int, rest: list[int]) -> float:
    """read() from rest's points of i's routing kind where there are two or more."""
    same = [j for j in rest if workload(j)[3].split(":")[0] == workload(i)[3].split(":")[0]]
    return read(i, same if len(same) >= 2 else rest)


for name, axis in (("rows", rows), ("work", work)):
    for monotone in (False, True):
        left_out(f"{name:4s} iso {monotone!s:5s}",
                 lambda i, rest, a=axis, m=monotone: read(i, rest, a, m))
left_out("rows iso True  bracketed", bracketed)
left_out("rows iso True  own routing", own_routing)
