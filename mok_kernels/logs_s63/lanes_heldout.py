"""push_lanes_bound on and off against held-out drawn-seed runs (session 63, the 2-core CPU box):
per run file, analytic MAPE, max, signed median by dispatch and the tuner's regret among each
workload's measured settings, with the shipped parameters and with push_lanes_bound 0 (the model
before session 63). No parameter was fitted on these files.

    PYTHONPATH=.:mok_kernels/logs_s60 python mok_kernels/logs_s63/lanes_heldout.py HARDWARE FILE ...
"""
import sys

import numpy as np

from calibration.registered import pick_regrets
from mok_model.params import load_params
from registered_drawn import predicted_mok

shipped = load_params(None, sys.argv[1])
for name, params in (("lanes 0", shipped.with_values(push_lanes_bound=0.0)), ("lanes 1", shipped)):
    every_e, every_reg, push_all = [], [], []
    for f in sys.argv[2:]:
        recs, pred = predicted_mok(params, f)
        e = np.array([p / r["latency_ms"]["median"] - 1 for p, r in zip(pred, recs)])
        reg = pick_regrets(recs, pred)
        push = np.array([r["config"]["dispatch"] == "push" for r in recs])
        every_e += list(e)
        every_reg += list(reg)
        push_all += list(push)
        print(f"{name} {f}: n {len(e)} MAPE {100 * np.abs(e).mean():.1f}% max "
              f"{100 * np.abs(e).max():.1f}% signed median push {100 * np.median(e[push]):+.1f}% "
              f"pull {100 * np.median(e[~push]):+.1f}%; regret mean {100 * np.mean(reg):.1f}% "
              f"max {100 * max(reg):.1f}%")
    e, push = np.array(every_e), np.array(push_all)
    print(f"{name} all: n {len(e)} MAPE {100 * np.abs(e).mean():.2f}% (push "
          f"{100 * np.abs(e[push]).mean():.2f}%, pull {100 * np.abs(e[~push]).mean():.2f}%) max "
          f"{100 * np.abs(e).max():.1f}%; regret mean {100 * np.mean(every_reg):.2f}% max "
          f"{100 * max(every_reg):.1f}%; workloads over 3%: "
          f"{sum(r > 0.03 for r in every_reg)} of {len(every_reg)}")
