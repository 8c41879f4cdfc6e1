"""Analytic error on held-out drawn-seed runs: all of it, after each shape's median log error is
removed, and within each workload (its mean removed) (session 64, the 2-core CPU box).

    PYTHONPATH=.:mok_kernels/logs_s60 python mok_kernels/logs_s64/residuals.py HARDWARE FILE ...
"""
import collections
import sys

import numpy as np

from mok_model.params import load_params
from registered_drawn import predicted_mok


def mape(v) -> float:
    return 100 * float(np.mean(np.abs(np.expm1(v))))


params = load_params(None, sys.argv[1])
rows = []
for f in sys.argv[2:]:
    recs, pred = predicted_mok(params, f)
    for r, p in zip(recs, pred):
        wl = (r["model"]["name"], r["ep"], r["tokens"], str(r["routing"]))
        rows.append((r["model"]["name"], wl, float(np.log(p / r["latency_ms"]["median"]))))
by_shape, by_wl = collections.defaultdict(list), collections.defaultdict(list)
for name, wl, e in rows:
    by_shape[name].append(e)
    by_wl[wl].append(e)
e = np.array([x[2] for x in rows])
shape_res = np.array([x[2] - np.median(by_shape[x[0]]) for x in rows])
wl_res = np.array([x[2] - np.mean(by_wl[x[1]]) for x in rows])
print(f"{len(rows)} runs: MAPE {mape(e):.2f}%; after each shape's median {mape(shape_res):.2f}%; "
      f"within workload (mean removed) {mape(wl_res):.2f}%")
