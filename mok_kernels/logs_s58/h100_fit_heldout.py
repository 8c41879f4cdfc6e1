"""Session 58: h100-1 fitted (mok calibrate --base h100-1, stage-2 defaults) on the H100 pass
files of seeds 8, 9, 21, 22 and the push grids, against the shipped (transferred) h100-1 on seeds
23 and 24, which it did not read: MAPE, max and tuner regret, both engines.

    R=calibration/runs/h100
    mok calibrate $R/drawn8.jsonl $R/drawn9.jsonl $R/drawn21.jsonl $R/drawn21g.jsonl \
        $R/drawn22.jsonl $R/drawn22_rerun.jsonl $R/push_lanes.jsonl $R/push_binds.jsonl \
        --base mok_model/params/h100-1.json --hardware h100-1 --band none --out /tmp/h100fit.json
    PYTHONPATH=. python mok_kernels/logs_s58/h100_fit_heldout.py /tmp/h100fit.json \
        $R/drawn23.jsonl $R/drawn24.jsonl
"""

import sys

sys.path.insert(0, "mok_kernels/logs_s55")
from collections import defaultdict
import numpy as np
from overhead_overlap_trial import forward_records
from calibration.scoring import predict_records
from mok_model.params import load_params, read_params
from mok_model.records import workload_key
from pathlib import Path

P = {"shipped": load_params(None, "h100-1"), "fit": read_params(Path(sys.argv[1]))}
for f in sys.argv[2:]:
    recs = forward_records([f])
    meas = np.array([r["latency_ms"]["median"] for r in recs])
    g = defaultdict(list)
    for i, r in enumerate(recs):
        g[workload_key(r)[:8]].append(i)
    for name, p in P.items():
        for eng in ("analytic", "sim"):
            pred = predict_records(recs, p, engine=eng)
            e = np.abs(pred / meas - 1)
            reg = [
                meas[min(idx, key=lambda i: pred[i])] / min(meas[idx]) - 1
                for idx in g.values()
                if len(idx) > 1
            ]
            print(
                "%-40s %-8s %-8s MAPE %.2f max %.1f regret mean %.2f max %.1f"
                % (
                    f[-40:],
                    name,
                    eng,
                    100 * e.mean(),
                    100 * e.max(),
                    100 * np.mean(reg),
                    100 * np.max(reg),
                ),
                flush=True,
            )
