"""The simulator with push_lanes_bound on and off against held-out drawn-seed runs (session 63,
the 2-core CPU box): push records only (pull does not move), MAPE and signed median per file.

    PYTHONPATH=.:mok_kernels/logs_s60 python mok_kernels/logs_s63/lanes_heldout_sim.py HARDWARE FILE ...
"""
import sys

import numpy as np

from calibration.scoring import predict_records
from mok_model.params import load_params
from registered_drawn import predicted_mok

shipped = load_params(None, sys.argv[1])
for f in sys.argv[2:]:
    recs, _ = predicted_mok(shipped, f)
    push = [r for r in recs if r["config"]["dispatch"] == "push"]
    meas = np.array([r["latency_ms"]["median"] for r in push])
    line = []
    for name, params in (("lanes 0", shipped.with_values(push_lanes_bound=0.0)),
                         ("lanes 1", shipped)):
        e = predict_records(push, params, "sim") / meas - 1
        line.append(f"{name} MAPE {100 * np.abs(e).mean():.1f}% max {100 * np.abs(e).max():.1f}% "
                    f"signed median {100 * np.median(e):+.1f}%")
    print(f"{f}: {len(push)} push runs, simulator: " + "; ".join(line), flush=True)
