"""Session 77: within each held-out workload, each setting's time relative to the default knobs'
(pull, push, 4096, 32), measured against predicted, by pass-length band and by the knob that
differs: the error that decides the tuner's pick (the 2-core CPU box).

    PYTHONPATH=.:mok_kernels/logs_s60 python mok_kernels/logs_s77/rel_default.py HARDWARE FILE ...
"""
import collections
import sys

import numpy as np
from registered_drawn import predicted_mok

from mok_model.params import load_params
from mok_model.records import workload_key

KNOBS = ("dispatch", "combine", "minibatch", "comm_sms")
DEFAULT = ("pull", "push", 4096, 32)

params = load_params(None, sys.argv[1])
cells = collections.defaultdict(list)
for f in sys.argv[2:]:
    recs, pred = predicted_mok(params, f)
    per = collections.defaultdict(list)
    for r, q in zip(recs, pred):
        per[workload_key(r)].append((r, q))
    for runs in per.values():
        knobs = [tuple(r["config"][k] for k in KNOBS) for r, _ in runs]
        if DEFAULT not in knobs:
            continue
        d = knobs.index(DEFAULT)
        md, qd = runs[d][0]["latency_ms"]["median"], runs[d][1]
        band = "<0.3" if md < 0.3 else ("0.3-3" if md < 3 else ">3")
        for (r, q), kn in zip(runs, knobs):
            if kn == DEFAULT:
                continue
            meas, pr = r["latency_ms"]["median"] / md, q / qd
            err = np.log(pr / meas)
            for i, name in enumerate(KNOBS):
                if kn[i] != DEFAULT[i]:
                    cells[(band, name, kn[i])].append((err, meas, pr))
                    cells[(band + " " + kn[1] + "-combine", name, kn[i])].append((err, meas, pr))
print("band  knob  value   n  mean log(pred/meas) of the ratio to default  | meas ratio  pred ratio (medians)")
for k in sorted(cells, key=str):
    a = np.array(cells[k])
    if len(a) >= 8:
        print(f"{k[0]:6s} {k[1]:9s} {str(k[2]):6s} {len(a):4d} {100 * a[:, 0].mean():+6.1f}% "
              f"(median {100 * np.median(a[:, 0]):+5.1f}%)  | {np.median(a[:, 1]):.3f} {np.median(a[:, 2]):.3f}")
