"""Session 58: the analytic model's error (pred / measured - 1) on the held-out drawn run files,
by (dispatch, combine) and tokens-per-GPU bin, shipped parameters.

    PYTHONPATH=. python mok_kernels/logs_s58/push_residuals.py
"""

import sys

sys.path.insert(0, "mok_kernels/logs_s55")
from collections import defaultdict
import numpy as np
from overhead_overlap_trial import HELD_OUT, forward_records
from calibration.scoring import predict_records
from mok_model.params import load_params

HELD = {**HELD_OUT, "h100 drawn24": (["calibration/runs/h100/drawn24.jsonl"], "h100-1")}
BINS = (0, 512, 1024, 2048, 4096, 10**9)
cells = defaultdict(list)
for files, hw in HELD.values():
    recs = forward_records(files)
    meas = np.array([r["latency_ms"]["median"] for r in recs])
    err = predict_records(recs, load_params(None, hw)) / meas - 1
    for r, e in zip(recs, err):
        c = r["config"]
        n = r["tokens"]
        b = next(i for i in range(len(BINS) - 1) if BINS[i] <= n < BINS[i + 1])
        cells[(c["dispatch"] + "/" + c["combine"], b)].append(e)
        cells[(c["dispatch"] + "/" + c["combine"] + " mb" + str(c["minibatch"]), b)].append(e)
print(
    "%-22s" % "knobs"
    + "".join(
        "%22s" % ("%d-%d" % (BINS[i], BINS[i + 1] - 1) if i < len(BINS) - 2 else ">=%d" % BINS[i])
        for i in range(len(BINS) - 1)
    )
)
for k in sorted({k for k, _ in cells}):
    row = "%-22s" % k
    for b in range(len(BINS) - 1):
        e = np.array(cells.get((k, b), []))
        row += "%22s" % (
            "%+5.1f%% (%+5.1f) n%-3d" % (100 * np.median(e), 100 * np.mean(e), len(e))
            if len(e)
            else "-"
        )
    print(row)
