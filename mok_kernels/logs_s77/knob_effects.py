"""Session 77: each knob value's mean effect on a held-out pass, measured against predicted:
log(time) = workload effect + one term per knob value (pull, push, 4096 and 32 the references),
fitted by least squares within a band of passes, to the measured medians and to the model's
predictions of the same runs (the 2-core CPU box).

    PYTHONPATH=.:mok_kernels/logs_s60 python mok_kernels/logs_s77/knob_effects.py HARDWARE FILE ...
"""
import collections
import sys

import numpy as np
from registered_drawn import predicted_mok

from calibration.validate import group_key
from mok_model.params import load_params

REF = {"dispatch": "pull", "combine": "push", "minibatch": 4096, "comm_sms": 32}
params = load_params(None, sys.argv[1])
bands = collections.defaultdict(list)
for f in sys.argv[2:]:
    recs, pred = predicted_mok(params, f)
    for r, q in zip(recs, pred):
        t = r["tokens"]
        band = "tokens<=640" if t <= 640 else "tokens 2048" if t <= 2048 else "tokens>2048"
        bands[band].append(((f, group_key(r)), r["config"], r["latency_ms"]["median"], q))
for band in sorted(bands):
    rows = bands[band]
    wl = sorted({w for w, *_ in rows}, key=str)
    wi = {w: i for i, w in enumerate(wl)}
    levels = [(k, v) for k in REF for v in sorted({c[k] for _, c, *_ in rows}, key=str) if v != REF[k]]
    X = np.zeros((len(rows), len(wl) + len(levels)))
    for i, (w, c, _, _) in enumerate(rows):
        X[i, wi[w]] = 1
        for j, (k, v) in enumerate(levels):
            X[i, len(wl) + j] = c[k] == v
    ym = np.log([m for *_, m, _ in rows])
    yq = np.log([q for *_, q in rows])
    bm = np.linalg.lstsq(X, ym, rcond=None)[0][len(wl):]
    bq = np.linalg.lstsq(X, yq, rcond=None)[0][len(wl):]
    print(f"{band}: {len(rows)} runs, {len(wl)} workloads; effect vs {REF} (exp - 1)")
    for (k, v), a, b in zip(levels, bm, bq):
        print(f"  {k:9s} {str(v):5s} measured {100 * np.expm1(a):+6.1f}%  predicted {100 * np.expm1(b):+6.1f}%"
              f"  (model {'over' if b > a else 'under'} by {100 * abs(b - a):.1f} points)")
