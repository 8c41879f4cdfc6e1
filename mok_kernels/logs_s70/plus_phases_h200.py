"""Session 70: held-out H200 GEMM phases (seeds 28-35) with the shipped table and with TABLE (the
session-70 candidate with seeds 21-27 added). PYTHONPATH=. python mok_kernels/logs_s70/plus_phases_h200.py TABLE"""

import glob
import sys
import re
import numpy as np
from calibration.gemm_table import table_records
from mok_model.gemm_table import read_table
from mok_model.records import read_records, record_scenario

tabs = {"shipped": read_table("mok_model/params/gemm/h200-1.json"), "plus21-27": read_table(sys.argv[1])}
files = sorted(
    f
    for f in glob.glob("calibration/runs/h200_drawn/gemm_phases_drawn*.jsonl")
    if int(re.search(r"drawn(\d+)", f)[1]) >= 28
)
data = []
for f in files:
    for r in table_records(read_records([f]), "h200-1", "mok-gemm"):
        data.append((record_scenario(r), r["latency_ms"]["median"] * 1e-3))
MS = np.array([m for _, m in data]) * 1e3
for name, t in tabs.items():
    launch = t.lookup["launch_us"] * 1e-6
    E = np.array([(t.scenario_seconds(s) + launch) / m - 1 for s, m in data])
    parts = []
    for lo, hi in [(0, 0.5), (0.5, 2), (2, 5), (5, 10), (10, 1e9)]:
        sel = (MS >= lo) & (MS < hi)
        parts.append(f"{lo:g}-{hi:g}: {100 * E[sel].mean():+4.1f}% (n {sel.sum()})")
    print(f"{name:10s} n {len(E)} MAPE {100 * abs(E).mean():.2f}% max {100 * abs(E).max():.1f}%  " + "; ".join(parts))
