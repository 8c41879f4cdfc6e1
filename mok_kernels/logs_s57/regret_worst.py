"""Session 57: the analytic tuner's worst picks (regret > 4 %) on the registered drawn run files no
fit reads, shipped parameters of 2026-12-05 (session 57's end): per workload the setting the model
ranks first against the best measured of the (four) timed settings.

    PYTHONPATH=. python mok_kernels/logs_s57/regret_worst.py
"""
import sys
sys.path.insert(0, "mok_kernels/logs_s55")
from collections import defaultdict
import numpy as np
from overhead_overlap_trial import HELD_OUT, forward_records
from calibration.scoring import predict_records
from mok_model.params import load_params
from mok_model.records import workload_key
HELD = {**HELD_OUT, "h100 drawn24": (["calibration/runs/h100/drawn24.jsonl"], "h100-1")}
KNOBS = ("dispatch", "combine", "minibatch", "comm_sms")


def knobs(rec):
    return "%s/%s mb%d c%d" % tuple(rec["config"][k] for k in KNOBS)


rows = []
for name, (files, hw) in HELD.items():
    recs = forward_records(files)
    meas = np.array([r["latency_ms"]["median"] for r in recs])
    pred = predict_records(recs, load_params(None, hw))
    groups = defaultdict(list)
    for i, r in enumerate(recs):
        groups[workload_key(r)[:8]].append(i)
    for k, idx in groups.items():
        if len(idx) < 2:
            continue
        pick = min(idx, key=lambda i: pred[i])
        best = min(idx, key=lambda i: meas[i])
        regret = meas[pick] / meas[best] - 1
        if regret > 0.04:
            rows.append((regret, name, recs[idx[0]]["model"]["name"], k[2], k[3], k[6],
                         knobs(recs[pick]), pred[pick], meas[pick], knobs(recs[best]), pred[best],
                         meas[best]))
rows.sort(reverse=True)
for r in rows:
    print("%5.1f%% %-13s %-30s ep%-3d n%-5d %-10s pick %-22s pred %.3f meas %.3f | best %-22s "
          "pred %.3f meas %.3f" % ((100 * r[0],) + r[1:]))
