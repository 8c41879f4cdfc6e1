"""Session 56: the fabric transfer from h200-1, pure and with the 2-H200 box's host terms
(transfer.HOST_TERMS, as h100-hgx8 takes them), beside the shipped h200-hgx8 fit (in sample), on the
real 2-GPU runs; analytic engine.

    PYTHONPATH=. python mok_kernels/logs_s56/x2_host_terms.py"""
import glob

import numpy as np

from calibration.transfer import fabric_params
from calibration.validate import validate
from mok_model.params import PARAMS_DIR, read_params
from mok_model.records import predictable, read_records

pure, box = fabric_params(), read_params(PARAMS_DIR / "h200-hgx8.json")
runs = read_records(sorted(glob.glob("calibration/runs/h200x2/bench_*.jsonl")))
for system in ("mok", "nccl-torch"):
    recs = [r for r in runs if r["system"] == system and predictable(r)]
    for name, p in (("transfer", pure), ("transfer + host terms", fabric_params(host=True)),
                    ("shipped fit (in sample)", box)):
        v = validate(recs, p, "analytic")
        signed = np.mean([x["predicted_ms"] / x["measured_ms"] - 1 for x in v.rows])
        print(f"{system:10s} {name:24s} n {v.n} MAPE {100 * v.mape:.1f}% max {100 * v.max_ape:.1f}% "
              f"signed {100 * signed:+.1f}%")
