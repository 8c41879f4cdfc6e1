"""Session 77: a card's held-out forward runs with the largest errors under the shipped
parameters: shape, EP, tokens, routing, knobs, measured and predicted (the 2-core CPU box).

    PYTHONPATH=.:mok_kernels/logs_s60 python mok_kernels/logs_s77/worst.py HARDWARE N FILE ...
"""
import sys

import numpy as np
from registered_drawn import predicted_mok

from mok_model.params import load_params

params = load_params(None, sys.argv[1])
rows = []
for f in sys.argv[3:]:
    recs, pred = predicted_mok(params, f)
    for r, q in zip(recs, pred):
        m = r["latency_ms"]["median"]
        c = r["config"]
        rows.append((q / m - 1, f.split("/")[-1], r["model"]["name"], r["ep"], r["tokens"],
                     r["routing"]["kind"], (c["dispatch"], c["combine"], c["minibatch"], c["comm_sms"]), m, q))
rows.sort(key=lambda x: -abs(x[0]))
e = np.array([x[0] for x in rows])
print(f"n {len(e)}; over 15%: {(abs(e) > .15).sum()} ({(e > .15).sum()} slow, {(e < -.15).sum()} fast)")
for x in rows[:int(sys.argv[2])]:
    print(f"{100 * x[0]:+6.1f}%  {x[1]:18s} {x[2]:32s} ep{x[3]:<3d} {x[4]:5d} {x[5]:8s} {x[6]}  "
          f"meas {x[7]:.3f} pred {x[8]:.3f}")
