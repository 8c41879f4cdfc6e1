"""Session 58's scripts share this: the registered drawn run files no fit reads (seeds 20-22 on
the H200, 21-24 on the H100) and, per file, its forward BF16 MoK records with their measured and
predicted (shipped parameters, analytic) latencies."""

import sys

import numpy as np

sys.path.insert(0, "mok_kernels/logs_s55")
from overhead_overlap_trial import HELD_OUT, forward_records  # noqa: E402
from calibration.scoring import predict_records  # noqa: E402
from mok_model.params import load_params  # noqa: E402

HELD = {**HELD_OUT, "h100 drawn24": (["calibration/runs/h100/drawn24.jsonl"], "h100-1")}


def predicted(files: dict = HELD):
    """(name, hardware, records, measured ms, predicted ms) of each file group."""
    for name, (paths, hw) in files.items():
        recs = forward_records(paths)
        meas = np.array([r["latency_ms"]["median"] for r in recs])
        yield name, hw, recs, meas, predict_records(recs, load_params(None, hw))
