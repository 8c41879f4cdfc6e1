"""Session 77: pairs of settings inside a held-out workload that the measurements tell apart by
more than GAP (e.g. 0.03: three drift SDs above 2,048 tokens), ordered the other way by the
model: counted by token band and by the knobs that differ; with WORST, instead the WORST such
pairs by measured gap, each with its two settings' measured / predicted ms (the 2-core CPU box).

    PYTHONPATH=.:mok_kernels/logs_s60 python mok_kernels/logs_s77/misorder.py HARDWARE GAP [--worst N] FILE ...
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
files = sys.argv[3:]
worst = None
if files[:1] == ["--worst"]:
    worst, files = int(files[1]), files[2:]
groups = collections.defaultdict(list)
for f in files:
    recs, pred = predicted_mok(params, f)
    for r, q in zip(recs, pred):
        groups[(f, group_key(r))].append((r, q))
tot, bad = collections.Counter(), collections.Counter()
rows = []
for (f, _), runs in groups.items():
    for (a, qa), (b, qb) in itertools.combinations(runs, 2):
        ma, mb = a["latency_ms"]["median"], b["latency_ms"]["median"]
        g = max(ma, mb) / min(ma, mb) - 1
        if g < gap:
            continue
        t = a["tokens"]
        tb = "<=128" if t <= 128 else ("<=2048" if t <= 2048 else ">2048")
        diff = "+".join(k for k in KNOBS if a["config"][k] != b["config"][k])
        wrong = (ma < mb) != (qa < qb)
        for key in ((tb, "*"), (tb, diff)):
            tot[key] += 1
            bad[key] += wrong
        if wrong:
            ka, kb = (tuple(x["config"][k] for k in KNOBS) for x in (a, b))
            rows.append((g, f.split("/")[-1], a["model"]["name"], a["ep"], t, a["routing"]["kind"],
                         ka, ma, qa, kb, mb, qb))
if worst is not None:
    for x in sorted(rows, reverse=True)[:worst]:
        print(f"{100 * x[0]:5.1f}% {x[1]:17s} {x[2]:30s} ep{x[3]:<3d}{x[4]:5d} {x[5]:7s} {x[6]} "
              f"{x[7]:.3f}/{x[8]:.3f} | {x[9]} {x[10]:.3f}/{x[11]:.3f}")
    sys.exit()
print(f"pairs apart by > {100 * gap:.0f}% measured: share the model orders the other way")
for k in sorted(tot, key=lambda k: (k[0], -tot[k])):
    if tot[k] >= 15:
        print(f"{k[0]:7s} {k[1]:36s} {tot[k]:5d}  wrong {bad[k]:4d} ({100 * bad[k] / tot[k]:4.1f}%)")
