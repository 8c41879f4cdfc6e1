"""Session 58: per workload, the GEMM table's error on the kernel's GEMM phases alone (mok-gemm
records of the kernel as it runs today: calibration.gemm_table.table_records) beside the pass's
mean error over its timed settings, shipped parameters.

    PYTHONPATH=. python mok_kernels/logs_s58/gemm_vs_pass.py h100-1 \
        calibration/runs/h100/gemm_phases_drawn21.jsonl calibration/runs/h100/drawn21g.jsonl
"""

import sys

sys.path.insert(0, "mok_kernels/logs_s55")
from collections import defaultdict
import numpy as np
from scipy.stats import pearsonr
from calibration.gemm_table import table_records
from calibration.scoring import predict_records
from mok_model.params import load_params
from mok_model.records import model_records, read_records, record_scenario, workload_key

hw = sys.argv[1]
phases = sys.argv[2]
passes = sys.argv[3:]
p = load_params(None, hw)

g = table_records(read_records([phases]), hw, "mok-gemm")  # today's kernel only
t = p.gemm_table
gerr = {}
for r in g:
    x = (t.scenario_seconds(record_scenario(r)) + t.lookup["launch_us"] * 1e-6) * 1e3
    gerr[workload_key(r)[:8]] = x / r["latency_ms"]["median"] - 1
recs = model_records(
    [
        r
        for r in read_records(passes)
        if r["system"] == "mok" and r["pass"] == "fwd" and r["precision"] == "bf16"
    ]
)[0]
pp = predict_records(recs, p)
perr = defaultdict(list)
gemm_meas = {}
for r, x in zip(recs, pp):
    perr[workload_key(r)[:8]].append(x / r["latency_ms"]["median"] - 1)
a, b = [], []
for k, e in sorted(perr.items(), key=lambda kv: np.mean(kv[1])):
    if k in gerr:
        a.append(gerr[k])
        b.append(np.mean(e))
        print(
            "%-40s ep%-3d n%-5d %-12s gemm %+6.1f%%  pass mean %+6.1f%%  (%s)"
            % (
                str(k[1])[:40],
                k[2],
                k[3],
                k[6],
                100 * gerr[k],
                100 * np.mean(e),
                " ".join("%+.0f" % (100 * x) for x in e),
            )
        )

print("n", len(a), "pearson", pearsonr(a, b))
