"""Session 77: pairs of settings inside a held-out workload that the measurements tell apart by
more than GAP (default 3 %, three drift SDs above 2,048 tokens), ordered the other way by the
model: counted by token band and by the knobs that differ, with the measured and predicted
ratios (the 2-core CPU box).

    PYTHONPATH=.:mok_kernels/logs_s60 python mok_kernels/logs_s77/misorder.py HARDWARE GAP FILE ...
"""
import collections
import itertools
import sys

from registered_drawn import predicted_mok

from calibration.validate import group_key
from mok_model.params import load_params

KNOBS = ("dispatch", "combine", "minibatch", "comm_sms")
params = load_params(None, sys.argv[1])
gap = float(sys.argv[2])
groups = collections.defaultdict(list)
for f in sys.argv[3:]:
    recs, pred = predicted_mok(params, f)
    for r, q in zip(recs, pred):
        groups[(f, group_key(r))].append((r, q))
tot, bad = collections.Counter(), collections.Counter()
for runs in groups.values():
    for (a, qa), (b, qb) in itertools.combinations(runs, 2):
        ma, mb = a["latency_ms"]["median"], b["latency_ms"]["median"]
        if max(ma, mb) / min(ma, mb) - 1 < gap:
            continue
        t = a["tokens"]
        tb = "<=128" if t <= 128 else ("<=2048" if t <= 2048 else ">2048")
        diff = "+".join(k for k in KNOBS if a["config"][k] != b["config"][k])
        # the single-knob axis, oriented: which value the measurement favours
        wrong = (ma < mb) != (qa < qb)
        for key in ((tb, "*"), (tb, diff)):
            tot[key] += 1
            bad[key] += wrong
print(f"pairs apart by > {100 * gap:.0f}% measured: share the model orders the other way")
for k in sorted(tot, key=lambda k: (k[0], -tot[k])):
    if tot[k] >= 15:
        print(f"{k[0]:7s} {k[1]:36s} {tot[k]:5d}  wrong {bad[k]:4d} ({100 * bad[k] / tot[k]:4.1f}%)")
