"""Session 58: the analytic model's error (pred / measured - 1) on the held-out drawn run files,
by (dispatch, combine) and tokens-per-GPU bin, shipped parameters.

    PYTHONPATH=. python mok_kernels/logs_s58/push_residuals.py
"""

from collections import defaultdict
import numpy as np
from drawn import predicted

BINS = (0, 512, 1024, 2048, 4096, 10**9)
cells = defaultdict(list)
for _, _, recs, meas, pred in predicted():
    for r, e in zip(recs, pred / meas - 1):
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
