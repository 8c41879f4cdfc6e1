"""Session 76: the held-out workloads whose told-the-routing 2 % pick misses the measured best by
over 3 %, with the knob picked, the knob measured best, and each one's predicted and measured
ratio to the workload's best; then how often each knob axis is where the pick went wrong.

    PYTHONPATH=.:mok_kernels/logs_s60 python mok_kernels/logs_s76/regret_cases.py HARDWARE FILE ...
"""
import collections
import sys

import numpy as np
from registered_drawn import predicted_mok

from mok_model.params import load_params
from mok_model.records import workload_key
from mok_model.tuner import DEFAULT_MARGIN, tie_rounded

KNOBS = ("dispatch", "combine", "minibatch", "comm_sms")
DEFAULT = ("pull", "push", 4096, 32)


def grid_order(k):
    return (k[0] != "pull", k[1] != "push", k[2], k[3])


def pick(score, knobs):
    order = sorted(range(len(knobs)), key=lambda i: (tie_rounded(score[i]), grid_order(knobs[i])))
    best, d = order[0], knobs.index(DEFAULT)
    return d if score[best] > score[d] * (1 - DEFAULT_MARGIN) else best


params = load_params(None, sys.argv[1])
axes = collections.Counter()
n = 0
rows = []
for f in sys.argv[2:]:
    recs, pred = predicted_mok(params, f)
    per = collections.defaultdict(list)
    for r, q in zip(recs, pred):
        per[workload_key(r)].append((r, q))
    for runs in per.values():
        knobs = [tuple(r["config"][k] for k in KNOBS) for r, _ in runs]
        if len(runs) < 2 or DEFAULT not in knobs:
            continue
        n += 1
        meas = np.array([r["latency_ms"]["median"] for r, _ in runs])
        q = np.array([x for _, x in runs])
        p, b = pick(list(q), knobs), int(meas.argmin())
        reg = meas[p] / meas[b] - 1
        if reg <= 0.03:
            continue
        for i, name in enumerate(KNOBS):
            if knobs[p][i] != knobs[b][i]:
                axes[name] += 1
        r0 = runs[0][0]
        rows.append((reg, f.split("/")[-1], r0["model"]["name"], r0["ep"], r0["tokens"], meas[b],
                     knobs[p], q[p] / q.min(), knobs[b], q[b] / q.min()))
rows.sort(reverse=True)
print(f"{len(rows)} of {n} workloads over 3 %; the axis where pick and best differ: {dict(axes)}")
print("regret  file  model  ep  tokens  best_ms  | picked knobs (pred/min)  | best knobs (pred/min)")
for reg, f, m, ep, t, bm, kp, qp, kb, qb in rows:
    print(f"{100 * reg:5.1f}%  {f:22s} {m:34s} ep{ep:<3d} {t:5d} {bm:7.3f} | {kp} {qp:.3f} | {kb} {qb:.3f}")
