"""Session 77: a card's held-out within-workload Spearman and argmin regret by token band (the
bands calibration.noise's drift ceiling uses) and by the spread of the workload's measured
settings (max / min - 1): where the model's ranking falls short of the records' ceiling
(the 2-core CPU box).

    PYTHONPATH=.:mok_kernels/logs_s60 python mok_kernels/logs_s77/spearman_bands.py HARDWARE FILE ...
"""
import collections
import sys

import numpy as np
from registered_drawn import predicted_mok

from calibration.validate import group_key, spearman
from mok_model.params import load_params

params = load_params(None, sys.argv[1])
groups = collections.defaultdict(list)
for f in sys.argv[2:]:
    recs, pred = predicted_mok(params, f)
    for r, q in zip(recs, pred):
        groups[(f, group_key(r))].append((r["tokens"], r["latency_ms"]["median"], q))
cells = collections.defaultdict(list)
for g in groups.values():
    a = np.array(g)
    if len(a) < 3:
        continue
    rho = spearman(a[:, 1], a[:, 2])
    reg = a[np.argmin(a[:, 2]), 1] / a[:, 1].min() - 1
    t = a[0, 0]
    tb = "<=128" if t <= 128 else ("<=2048" if t <= 2048 else ">2048")
    spread = a[:, 1].max() / a[:, 1].min() - 1
    sb = "spread<10%" if spread < .1 else ("spread10-30%" if spread < .3 else "spread>30%")
    for key in (("tokens", tb), ("spread", sb), ("all", "")):
        cells[key].append((rho, reg))
for k in sorted(cells):
    a = np.array(cells[k])
    ok = ~np.isnan(a[:, 0])
    print(f"{k[0]:7s} {k[1]:13s} n {len(a):4d}  Spearman {np.mean(a[ok, 0]):.3f}  "
          f"argmin regret mean {100 * a[:, 1].mean():.2f}% max {100 * a[:, 1].max():.1f}%")
