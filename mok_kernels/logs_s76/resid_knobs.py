"""Session 76: a card's held-out forward runs, signed error (predicted / measured - 1) by combine
and comm SMs, in three pass-length bands (the 2-core CPU box).

    PYTHONPATH=.:mok_kernels/logs_s60 python mok_kernels/logs_s76/resid_knobs.py HARDWARE FILE ...
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
        band = "<0.5ms" if m < 0.5 else ("0.5-3ms" if m < 3 else ">3ms")
        c = r["config"]
        cells[(band, c["dispatch"], c["combine"], c["comm_sms"])].append(q / m - 1)
        if band == ">3ms":
            cells[(band + " " + r["routing"]["kind"], "*", c["combine"], c["comm_sms"])].append(q / m - 1)
print("band      dispatch combine comm_sms   n   mean   median")
for k in sorted(cells):
    e = np.array(cells[k])
    if len(e) >= 5:
        print(f"{k[0]:8s} {k[1]:5s} {k[2]:5s} {k[3]:3d} {len(e):5d} {100 * e.mean():+6.1f}% "
              f"{100 * np.median(e):+6.1f}%")
