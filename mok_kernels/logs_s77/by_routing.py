"""Session 77: a card's held-out forward runs, signed error (predicted / measured - 1) by routing
kind x pass-length band x EP, with the spread (the 2-core CPU box).

    PYTHONPATH=.:mok_kernels/logs_s60 python mok_kernels/logs_s77/by_routing.py HARDWARE FILE ...
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
        m = r["latency_ms"]["median"]
        band = "<0.3ms" if m < 0.3 else ("0.3-3ms" if m < 3 else ">3ms")
        kind = r["routing"]["kind"]
        e = q / m - 1
        cells[(kind, band, "*")].append(e)
        cells[(kind, "*", f"ep{r['ep']}")].append(e)
        cells[(kind, "*", f"tok{r['tokens']}")].append(e)
print("routing  band     group     n   mean  median  MAPE  p10    p90")
for k in sorted(cells):
    e = np.array(cells[k])
    print(f"{k[0]:8s} {k[1]:8s} {k[2]:8s} {len(e):4d} {100 * e.mean():+6.1f}% {100 * np.median(e):+6.1f}% "
          f"{100 * abs(e).mean():5.1f}% {100 * np.percentile(e, 10):+6.1f}% {100 * np.percentile(e, 90):+6.1f}%")
