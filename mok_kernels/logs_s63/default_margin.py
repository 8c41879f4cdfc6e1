"""A tuner that keeps the default knobs (pull/push, minibatch 4096, 32 comm SMs) unless another
setting is predicted at least `margin` faster: its regret among each workload's measured
settings, per margin, on drawn-seed runs no fit read (session 63, the 2-core CPU box).

    PYTHONPATH=.:mok_kernels/logs_s60 python mok_kernels/logs_s63/default_margin.py HARDWARE FILE ...
"""
import collections
import sys

import numpy as np

from mok_model.params import load_params
from mok_model.records import workload_key
from registered_drawn import predicted_mok

DEFAULT = ("pull", "push", 4096, 32)
MARGINS = (0.0, 0.01, 0.02, 0.03, 0.05)
params = load_params(None, sys.argv[1])
regrets = {m: [] for m in MARGINS}
for f in sys.argv[2:]:
    recs, pred = predicted_mok(params, f)
    per = collections.defaultdict(list)
    for r, q in zip(recs, pred):
        c = r["config"]
        per[workload_key(r)].append(((c["dispatch"], c["combine"], c["minibatch"], c["comm_sms"]),
                                     q, r["latency_ms"]["median"]))
    for runs in per.values():
        defaults = [x for x in runs if x[0] == DEFAULT]
        if len(runs) < 2 or not defaults:
            continue
        best = min(x[2] for x in runs)
        d = defaults[0]
        for m in MARGINS:
            pick = min(runs, key=lambda x: x[1])
            if pick[1] > d[1] * (1 - m):          # not predicted `m` faster: keep the default
                pick = d
            regrets[m].append(pick[2] / best - 1)
for m in MARGINS:
    r = np.array(regrets[m])
    print(f"margin {100 * m:.0f}%: {len(r)} workloads, regret mean {100 * r.mean():.2f}% max "
          f"{100 * r.max():.1f}%, over 3% {int((r > 0.03).sum())}")
