"""Session 58: the analytic error on h200-1's training files by dispatch mode and tokens per GPU
(median and mean), shipped parameters.

    PYTHONPATH=. python mok_kernels/logs_s58/train_by_dispatch.py
"""

import sys

sys.path.insert(0, "mok_kernels/logs_s55")
from collections import defaultdict
import numpy as np
from overhead_overlap_trial import training_files, forward_records
from calibration.scoring import predict_records
from mok_model.params import load_params

files = training_files()
print(len(files), files[:20])
recs = forward_records(files)
meas = np.array([r["latency_ms"]["median"] for r in recs])
err = predict_records(recs, load_params(None, "h200-1")) / meas - 1
cells = defaultdict(list)
for r, e in zip(recs, err):
    c = r["config"]
    cells[(c["dispatch"], r["tokens"])].append(e)
for k in sorted(cells):
    e = np.array(cells[k])
    print(k, len(e), "%+.1f%% mean %+.1f%%" % (100 * np.median(e), 100 * e.mean()))
