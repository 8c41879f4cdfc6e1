"""A refit's parameters against the shipped ones on held-out drawn-seed runs (no fit read them):
analytic MAPE, max, signed median by dispatch, Spearman-free regret among each workload's measured
settings (calibration.registered.pick_regrets: ties in the tuner's grid order), pooled and per
file (session 64, the 2-core CPU box).

    PYTHONPATH=.:mok_kernels/logs_s60 python mok_kernels/logs_s64/refit_heldout.py HARDWARE NEW.json FILE ...
"""
import sys

import numpy as np

from calibration.registered import pick_regrets
from mok_model.params import load_params
from registered_drawn import predicted_mok

hw, new = sys.argv[1], sys.argv[2]
for name, params in (("shipped", load_params(None, hw)), ("refit", load_params(new, hw))):
    every_e, every_reg, push_all = [], [], []
    for f in sys.argv[3:]:
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
