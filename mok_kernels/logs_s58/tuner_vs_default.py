"""Session 58: would "keep the default knobs (pull / push, minibatch 4,096, 32 comm SMs) unless the
model predicts a gain above delta" lower the analytic tuner's regret? Per workload, the setting
picked among those timed, against the best timed; shipped parameters. Extra run files as
arguments (their card from the path).

    PYTHONPATH=. python mok_kernels/logs_s58/tuner_vs_default.py [RUNS ...]
"""

import sys
from collections import defaultdict

import numpy as np
from drawn import HELD, predicted
from mok_model.records import workload_key

FILES = dict(HELD)
extra = sys.argv[1:]
for f in extra:
    FILES[f] = ([f], "h100-1" if "/h100/" in f else "h200-1")
ANCHOR = ("pull", "push", 4096, 32)
DELTAS = (0, 0.01, 0.02, 0.03, 0.05, 0.08)
tot = defaultdict(list)
for name, _, recs, meas, pred in predicted(FILES):
    g = defaultdict(list)
    for i, r in enumerate(recs):
        g[workload_key(r)[:8]].append(i)
    res = defaultdict(list)
    for idx in g.values():
        if len(idx) < 2:
            continue
        anc = [
            i
            for i in idx
            if tuple(recs[i]["config"][x] for x in ("dispatch", "combine", "minibatch", "comm_sms"))
            == ANCHOR
        ]
        best = min(meas[i] for i in idx)
        pick = min(idx, key=lambda i: pred[i])
        for d in DELTAS:
            p = pick
            if anc and pred[anc[0]] <= pred[pick] * (1 + d):
                p = anc[0]
            res[d].append(meas[p] / best - 1)
        res["anchor"].append(meas[anc[0]] / best - 1 if anc else np.nan)
    line = "%-40s n%-4d" % (name[-40:], len(res[0]))
    for d in list(DELTAS) + ["anchor"]:
        a = np.array(res[d])
        tot[d] += list(a)
        line += " | %s mean %.2f max %.1f" % (d, 100 * np.nanmean(a), 100 * np.nanmax(a))
    print(line)
line = "%-40s n%-4d" % ("ALL", len(tot[0]))
for d in list(DELTAS) + ["anchor"]:
    a = np.array(tot[d])
    line += " | %s mean %.2f max %.1f >3%%: %d" % (
        d,
        100 * np.nanmean(a),
        100 * np.nanmax(a),
        np.sum(a > 0.03),
    )
print(line)
