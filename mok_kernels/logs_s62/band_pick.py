"""Session 62: would the tuner's regret fall if it picked each workload's setting by the upper
end of the bootstrap band (the parameters' samples) instead of the median prediction?

    PYTHONPATH=. python mok_kernels/logs_s62/band_pick.py h100-1 calibration/runs/h100/drawn2{5..9}.jsonl ...
"""
import collections
import sys

import numpy as np

sys.path.insert(0, "mok_kernels/logs_s60")
from registered_drawn import predicted_mok
from calibration.checks import shipped_params
from calibration.scoring import predict_records
from mok_model.records import workload_key
hw = sys.argv[1]
files = sys.argv[2:]
params = shipped_params(hw)
samples = params.samples()
print(len(samples), "samples")
for f in files:
    recs, pred = predicted_mok(params, f)
    S = np.array([list(predict_records(recs, s, "analytic")) for s in samples])  # (n_s, n)
    pred = np.array(pred)
    meas = np.array([r["latency_ms"]["median"] for r in recs])
    groups = collections.defaultdict(list)
    for i, r in enumerate(recs):
        groups[workload_key(r)].append(i)
    out = {}
    for name, score in (("median", pred), ("p90", np.quantile(S, 0.9, axis=0)), ("max", S.max(axis=0)),
                        ("mean", S.mean(axis=0))):
        reg = []
        for ix in groups.values():
            if len(ix) < 4:
                continue
            ix = np.array(ix)
            pick = ix[np.argmin(score[ix])]
            reg.append(meas[pick] / meas[ix].min() - 1)
        out[name] = (100 * np.mean(reg), 100 * np.max(reg))
    print(f, " ".join(f"{k} {m:.1f}/{x:.1f}%" for k, (m, x) in out.items()))
