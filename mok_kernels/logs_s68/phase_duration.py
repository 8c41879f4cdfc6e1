"""Session 68: the shipped GEMM tables' signed error on measured GEMM phases alone, by the
phase's measured duration, on both cards (a diagnostic, no fit). Reads the per-record lines of
mok_kernels/logs_s62/gemm_phase_errors.py:

    for s in 21 22 23 24 25 26 27 28 29 33 34; do PYTHONPATH=. python mok_kernels/logs_s62/gemm_phase_errors.py \
        mok_model/params/h100-1.json calibration/runs/h100/gemm_phases_drawn$s.jsonl; done > H100.txt
    for s in 25 28 33; do PYTHONPATH=. python mok_kernels/logs_s62/gemm_phase_errors.py \
        mok_model/params/h200-1.json calibration/runs/h200_drawn/gemm_phases_drawn$s.jsonl; done > H200.txt
    python mok_kernels/logs_s68/phase_duration.py H100.txt H200.txt
"""
import re
import sys

import numpy as np

BINS = ((0, 0.5), (0.5, 2), (2, 5), (5, 10), (10, 20), (20, 100))

for path in sys.argv[1:]:
    rows = [(float(m[1]), float(m[3])) for line in open(path)
            if (m := re.search(r"measured\s+([\d.]+) ms\s+table\s+([\d.]+)\s+([-+\d.]+)", line))]
    a = np.array(rows)
    print(f"{path}: {len(a)} phases (signed error = table / measured - 1)")
    for lo, hi in BINS:
        s = a[(a[:, 0] >= lo) & (a[:, 0] < hi)]
        if len(s):
            print(f"  {lo:>4}-{hi:<4} ms  n {len(s):3d}  signed mean {s[:, 1].mean():+6.1f} %  "
                  f"MAPE {np.abs(s[:, 1]).mean():5.1f} %")
