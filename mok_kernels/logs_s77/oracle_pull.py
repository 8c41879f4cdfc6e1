"""Session 77: what fixing the long passes' pull-combine bias could buy, before building it:
the held-out seeds read with the shipped predictions, then with every pull-combine run whose
*predicted* time is over T ms scaled by (1 - X) (an oracle of the bias's size, not a model):
MAPE, Spearman, argmin regret (the 2-core CPU box).

    PYTHONPATH=.:mok_kernels/logs_s60 python mok_kernels/logs_s77/oracle_pull.py HARDWARE T X FILE ...
"""
import sys

import numpy as np
from registered_drawn import predicted_mok

from calibration.registered import pick_regrets
from calibration.validate import grouped_spearman
from mok_model.params import load_params

params = load_params(None, sys.argv[1])
T, X = float(sys.argv[2]), float(sys.argv[3])
recs, pred = [], []
for f in sys.argv[4:]:
    r, q = predicted_mok(params, f)
    keep = [i for i, x in enumerate(r) if x["pass"] == "fwd" and x["precision"] == "bf16"]
    recs += [r[i] for i in keep]
    pred += [q[i] for i in keep]
m = np.array([x["latency_ms"]["median"] for x in recs])
for name, scale in (("shipped", 0.0), (f"pull combine over {T} ms x {1 - X:.2f}", X)):
    q = np.array([p * (1 - scale) if (x["config"]["combine"] == "pull" and p > T) else p
                  for x, p in zip(recs, pred)])
    e = np.abs(q / m - 1)
    rho, groups = grouped_spearman(recs, m, q)
    reg = np.array(pick_regrets(recs, list(q)))
    print(f"{name}: n {len(m)} MAPE {100 * e.mean():.2f}% max {100 * e.max():.1f}%; Spearman {rho:.3f} "
          f"({groups}); argmin regret mean {100 * reg.mean():.2f}% max {100 * reg.max():.1f}%, "
          f"over 3% {(reg > .03).sum()}")
