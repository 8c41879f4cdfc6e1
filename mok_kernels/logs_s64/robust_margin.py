"""The default-knob margin (tuner.DEFAULT_MARGIN) as MoKLayer's robust pick uses it: among each
workload's measured settings, the one whose worst predicted latency ratio over
tuner.robust_routings is least, or the default knobs unless that one is `margin` lower; its
measured regret under the workload's own routing (session 64, the 2-core CPU box).

    PYTHONPATH=.:mok_kernels/logs_s60 python mok_kernels/logs_s64/robust_margin.py HARDWARE FILE ...
"""
import collections
import dataclasses
import sys

import numpy as np

from mok_model.params import load_params
from mok_model.predict import predict
from mok_model.records import record_config, record_scenario, workload_key
from mok_model.tuner import robust_routings
from registered_drawn import predicted_mok

DEFAULT = ("pull", "push", 4096, 32)
MARGINS = (0.0, 0.01, 0.02, 0.03, 0.05)
params = load_params(None, sys.argv[1])
regrets = {m: [] for m in MARGINS}
for f in sys.argv[2:]:
    recs, _ = predicted_mok(params, f)
    per = collections.defaultdict(list)
    for r in recs:
        per[workload_key(r)].append(r)
    for runs in per.values():
        knobs = [tuple(r["config"][k] for k in ("dispatch", "combine", "minibatch", "comm_sms"))
                 for r in runs]
        if len(runs) < 2 or DEFAULT not in knobs:
            continue
        scn = record_scenario(runs[0])
        m = scn.model
        lat = np.array([[predict(dataclasses.replace(scn, routing=rt), record_config(r), "mok",
                                 params, refuse_overflow=False).latency_ms for rt in
                         robust_routings(m.top_k, m.routed_experts)] for r in runs])
        worst = (lat / lat.min(axis=0)).max(axis=1)
        measured = np.array([r["latency_ms"]["median"] for r in runs])
        d = knobs.index(DEFAULT)
        for mg in MARGINS:
            pick = int(np.argmin(worst))
            if worst[pick] > worst[d] * (1 - mg):
                pick = d
            regrets[mg].append(measured[pick] / measured.min() - 1)
for mg in MARGINS:
    r = np.array(regrets[mg])
    print(f"margin {100 * mg:.0f}%: {len(r)} workloads, regret mean {100 * r.mean():.2f}% max "
          f"{100 * r.max():.1f}%, over 3% {int((r > 0.03).sum())}")
