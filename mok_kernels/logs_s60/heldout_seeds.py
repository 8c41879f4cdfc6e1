"""A parameters file against held-out drawn-seed runs, after the fact (not registered): per
file, analytic MAPE, max, signed median by dispatch, and the tuner's regret among each workload's
measured settings (session 60, the 2-core CPU box).

    PYTHONPATH=. python mok_kernels/logs_s60/heldout_seeds.py PARAMS RUN_FILE ...
"""
import sys

import numpy as np

from calibration.registered import pick_regrets
from mok_model.params import read_params
from registered_drawn import predicted_mok

params = read_params(sys.argv[1])
for f in sys.argv[2:]:
    recs, pred = predicted_mok(params, f)
    e = np.array([p / r["latency_ms"]["median"] - 1 for p, r in zip(pred, recs)])
    reg = pick_regrets(recs, pred)
    push = np.array([r["config"]["dispatch"] == "push" for r in recs])
    print(f"{f}: n {len(e)} MAPE {100 * np.abs(e).mean():.1f}% max {100 * np.abs(e).max():.1f}% "
          f"signed median push {100 * np.median(e[push]):+.1f}% pull "
          f"{100 * np.median(e[~push]):+.1f}%; regret mean {100 * np.mean(reg):.1f}% max "
          f"{100 * max(reg):.1f}%")
