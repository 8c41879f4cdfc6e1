"""The default-knob margin (tuner.DEFAULT_MARGIN) among each workload's measured settings, with
exact prediction ties broken as the tuner's grid breaks them (pull dispatch, then push combine,
then the smaller minibatch, then fewer comm SMs), for the pick told the routing and for the
robust pick (worst predicted ratio over tuner.robust_routings). Regret: the pick's measured
time over the workload's best measured, minus 1 (session 64, the 2-core CPU box).

    PYTHONPATH=.:mok_kernels/logs_s60 python mok_kernels/logs_s64/margin_ties.py HARDWARE FILE ...

HARDWARE=PARAMS (session 73) reads with that parameters file of HARDWARE instead of the shipped one.
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


def grid_order(k):
    """The tuner's grid order of a setting (knob_grid: its tie-break)."""
    return (k[0] != "pull", k[1] != "push", k[2], k[3])


def pick(score, knobs, margin):
    order = sorted(range(len(knobs)), key=lambda i: (score[i], grid_order(knobs[i])))
    best, d = order[0], knobs.index(DEFAULT)
    return d if score[best] > score[d] * (1 - margin) else best


hardware, _, params_file = sys.argv[1].partition("=")
params = load_params(params_file or None, hardware)
told = {m: [] for m in MARGINS}
robust = {m: [] for m in MARGINS}
for f in sys.argv[2:]:
    recs, pred = predicted_mok(params, f)
    per = collections.defaultdict(list)
    for r, q in zip(recs, pred):
        per[workload_key(r)].append((r, q))
    for runs in per.values():
        knobs = [tuple(r["config"][k] for k in ("dispatch", "combine", "minibatch", "comm_sms"))
                 for r, _ in runs]
        if len(runs) < 2 or DEFAULT not in knobs:
            continue
        measured = np.array([r["latency_ms"]["median"] for r, _ in runs])
        scn = record_scenario(runs[0][0])
        m = scn.model
        lat = np.array([[predict(dataclasses.replace(scn, routing=rt), record_config(r), "mok",
                                 params, refuse_overflow=False).latency_ms
                         for rt in robust_routings(m.top_k, m.routed_experts)] for r, _ in runs])
        worst = (lat / lat.min(axis=0)).max(axis=1)
        for mg in MARGINS:
            told[mg].append(measured[pick([q for _, q in runs], knobs, mg)] / measured.min() - 1)
            robust[mg].append(measured[pick(list(worst), knobs, mg)] / measured.min() - 1)
for name, res in (("told the routing", told), ("robust", robust)):
    for mg in MARGINS:
        r = np.array(res[mg])
        print(f"{name}: margin {100 * mg:.0f}%: {len(r)} workloads, regret mean "
              f"{100 * r.mean():.2f}% max {100 * r.max():.1f}%, over 3% {int((r > 0.03).sum())}")
