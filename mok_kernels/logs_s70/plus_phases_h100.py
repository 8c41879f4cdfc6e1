"""Session 70: held-out H100 GEMM phases (seeds 28-37), shipped h100-1 table against the one
calibration.transfer makes from the h200-1 table in the checkout it runs in (the candidate worktree).
Run there: PYTHONPATH=. python /work/main/mok_kernels/logs_s70/plus_phases_h100.py"""

import glob
import re
import numpy as np
from calibration.gemm_table import table_records
from calibration.transfer import hopper_params
from mok_model.params import read_params
from mok_model.records import read_records, record_scenario

new = hopper_params().gemm_table
old = read_params("/work/main/mok_model/params/h100-1.json").gemm_table
files = sorted(
    f for f in glob.glob("calibration/runs/h100/gemm_phases_drawn*.jsonl") if int(re.search(r"drawn(\d+)", f)[1]) >= 28
)
data = []
for f in files:
    for r in table_records(read_records([f]), "h100-1", "mok-gemm"):
        data.append((record_scenario(r), r["latency_ms"]["median"] * 1e-3))
MS = np.array([m for _, m in data]) * 1e3
for name, t in (("shipped", old), ("plus21-27", new)):
    launch = t.lookup["launch_us"] * 1e-6
    E = np.array([(t.scenario_seconds(s) + launch) / m - 1 for s, m in data])
    parts = []
    for lo, hi in [(0, 0.5), (0.5, 2), (2, 5), (5, 10), (10, 1e9)]:
        sel = (MS >= lo) & (MS < hi)
        parts.append(f"{lo:g}-{hi:g}: {100 * E[sel].mean():+4.1f}% (n {sel.sum()})")
    print(f"{name:10s} n {len(E)} MAPE {100 * abs(E).mean():.2f}% max {100 * abs(E).max():.1f}%  " + "; ".join(parts))
