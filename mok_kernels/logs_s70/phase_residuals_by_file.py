"""Session 70: the shipped h200-1 table on GEMM-phase files (globs), signed error by duration.
PYTHONPATH=. python mok_kernels/logs_s70/phase_residuals_by_file.py GLOB..."""

import glob
import sys
import numpy as np
from calibration.gemm_table import table_records
from mok_model.records import read_records, record_scenario
from mok_model.params import read_params

t = read_params("mok_model/params/h200-1.json").gemm_table
launch = t.lookup["launch_us"] * 1e-6
for pat in sys.argv[1:]:
    E = []
    MS = []
    for f in sorted(glob.glob(pat)):
        for r in table_records(read_records([f]), "h200-1", "mok-gemm"):
            s = record_scenario(r)
            m = r["latency_ms"]["median"] * 1e-3
            E.append((t.scenario_seconds(s) + launch) / m - 1)
            MS.append(m * 1e3)
    E = np.array(E)
    MS = np.array(MS)
    print(pat, len(E), f"MAPE {100 * abs(E).mean():.2f}%")
    for lo, hi in [(0, 0.5), (0.5, 1), (1, 2), (2, 5), (5, 10), (10, 100)]:
        sel = (MS >= lo) & (MS < hi)
        if sel.any():
            print(f"  {lo:>4g}-{hi:<4g} ms n {sel.sum():4d} mean {100 * E[sel].mean():+5.1f}%")
