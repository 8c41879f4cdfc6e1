"""A parameters file against held-out drawn-seed runs, after the fact (not registered): per
file, analytic MAPE, max, signed median by dispatch, and the tuner's regret among each workload's
measured settings (session 60, the 2-core CPU box)."""
import collections
import sys

import numpy as np

from calibration.noise import pick_key
from calibration.scoring import predict_records
from mok_model.params import read_params
from mok_model.records import in_id_order, predictable, read_records, superseded_kernel, workload_key

params = read_params(sys.argv[1])
for f in sys.argv[2:]:
    recs = [r for r in in_id_order(read_records([f])) if r["system"] == "mok"
            and r["hardware"]["preset"] == params.hardware and predictable(r)
            and not superseded_kernel(r)]
    pred = predict_records(recs, params, "analytic")
    e = np.array([p / r["latency_ms"]["median"] - 1 for p, r in zip(pred, recs)])
    per = collections.defaultdict(list)
    for q, r in zip(pred, recs):
        per[workload_key(r)].append((pick_key(r, q), r["latency_ms"]["median"]))
    reg = [min(v)[1] / min(m for _, m in v) - 1 for v in per.values() if len(v) > 1]
    push = np.array([r["config"]["dispatch"] == "push" for r in recs])
    print(f"{f}: n {len(e)} MAPE {100*np.abs(e).mean():.1f}% max {100*np.abs(e).max():.1f}% "
          f"signed median push {100*np.median(e[push]):+.1f}% pull {100*np.median(e[~push]):+.1f}%; "
          f"regret mean {100*np.mean(reg):.1f}% max {100*max(reg):.1f}%")
