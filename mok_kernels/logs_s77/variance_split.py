"""Session 77: where a card's held-out error sits: the log error split into a workload's mean
(shape, EP, tokens, routing: what the knobs share) and the rest (what the knobs change), and the
workload mean split again by shape (the 2-core CPU box).

    PYTHONPATH=.:mok_kernels/logs_s60 python mok_kernels/logs_s77/variance_split.py HARDWARE FILE ...
"""
import collections
import sys

import numpy as np
from registered_drawn import predicted_mok

from mok_model.params import load_params
from mok_model.records import workload_key

params = load_params(None, sys.argv[1])
per = collections.defaultdict(list)
shape_of = {}
for f in sys.argv[2:]:
    recs, pred = predicted_mok(params, f)
    for r, q in zip(recs, pred):
        k = (f, workload_key(r))
        per[k].append(np.log(q / r["latency_ms"]["median"]))
        shape_of[k] = (f, r["model"]["name"])
allv = np.concatenate([np.array(v) for v in per.values()])
wmean = {k: np.mean(v) for k, v in per.items()}
within = np.concatenate([np.array(v) - wmean[k] for k, v in per.items()])
by_shape = collections.defaultdict(list)
for k, m in wmean.items():
    by_shape[shape_of[k]].append(m)
smean = {s: np.mean(v) for s, v in by_shape.items()}
wm = np.array(list(wmean.values()))
ws = np.array([wmean[k] - smean[shape_of[k]] for k in wmean])
print(f"{len(allv)} runs, {len(per)} workloads, {len(by_shape)} shapes")
print(f"rms log error, all: {100 * np.sqrt((allv ** 2).mean()):.2f}%")
print(f"  workload means (what the knobs share): {100 * np.sqrt((wm ** 2).mean()):.2f}%")
print(f"    of which the shape's mean: {100 * np.sqrt(np.mean([smean[shape_of[k]] ** 2 for k in wmean])):.2f}%, "
      f"EP / tokens / routing within a shape: {100 * np.sqrt((ws ** 2).mean()):.2f}%")
print(f"  within a workload (what the knobs change): {100 * np.sqrt((within ** 2).mean()):.2f}%")
