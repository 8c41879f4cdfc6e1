"""Session 77: a card's held-out forward runs with gpu_state: the model's signed error against
the SM clock read under the timed iterations (sm_mhz / sm_max_mhz), by pass-length band and
combine; do slow clocks explain the long passes' push-combine error? (the 2-core CPU box)

    PYTHONPATH=.:mok_kernels/logs_s60 python mok_kernels/logs_s77/clock_resid.py HARDWARE FILE ...
"""
import collections
import sys

import numpy as np
from registered_drawn import predicted_mok

from mok_model.params import load_params

params = load_params(None, sys.argv[1])
cells = collections.defaultdict(list)
for f in sys.argv[2:]:
    recs, pred = predicted_mok(params, f)
    for r, q in zip(recs, pred):
        g = r.get("gpu_state") or {}
        if "sm_mhz" not in g or not g.get("sm_max_mhz"):
            continue
        m = r["latency_ms"]["median"]
        band = "<0.5ms" if m < 0.5 else ("0.5-3ms" if m < 3 else ">3ms")
        clock = g["sm_mhz"] / g["sm_max_mhz"]
        cells[(band, r["config"]["combine"])].append((q / m - 1, clock))
print("band     combine   n  corr(err, clock)  err at clock>=0.98 (n)   err at clock<0.98 (n)  slope err/clock")
for k in sorted(cells):
    a = np.array(cells[k])
    hi, lo = a[a[:, 1] >= 0.98], a[a[:, 1] < 0.98]
    c = np.corrcoef(a[:, 0], a[:, 1])[0, 1] if a[:, 1].std() > 0 else float("nan")
    s = np.polyfit(a[:, 1], a[:, 0], 1)[0] if a[:, 1].std() > 0 else float("nan")
    e_hi = 100 * hi[:, 0].mean() if len(hi) else float("nan")
    e_lo = 100 * lo[:, 0].mean() if len(lo) else float("nan")
    print(f"{k[0]:8s} {k[1]:5s} {len(a):5d}  {c:+.2f}   {e_hi:+6.1f}% ({len(hi)})"
          f"   {e_lo:+6.1f}% ({len(lo)})   {s:+.2f}")
