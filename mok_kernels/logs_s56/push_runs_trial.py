"""Session 56's trial (not shipped): the push lanes' runs loop as push_idx measured it (one H100,
logs_s56/push_idx_analysis.txt): its copy at pull's rate (copy_load 1/pipe_copy_scale, not
1/serial_copy_scale) and a visit cost VISIT_US a row tile instead of push_scan_us. Only records of
the runs loop (push dispatch, forward, Triton) move. Analytic MAPE per file, shipped against the
candidate, on h200-1's training files and on the registered run files no fit read.

    PYTHONPATH=. python mok_kernels/logs_s56/push_runs_trial.py [VISIT_US ...]"""
import sys

import numpy as np

from mok_model import analytic as A
from mok_kernels.logs_s55.overhead_overlap_trial import HELD_OUT, forward_records, training_files
from calibration.scoring import predict_records
from mok_model.params import load_params

HELD = {**HELD_OUT, "h100 drawn24": (["calibration/runs/h100/drawn24.jsonl"], "h100-1"),
        "h100 push_binds": (["calibration/runs/h100/push_binds.jsonl"], "h100-1")}
_copy_load, _visit_s = A.copy_load, A.push_visit_s
TRIAL = {"visit_us": None}


def copy_load(scn, p, pull):
    if TRIAL["visit_us"] is not None and not pull and A.lanes_copy_runs(scn):
        return 1.0 / p["pipe_copy_scale"] if A.copy_steps(scn.model.hidden) > 1 else 1.0
    return _copy_load(scn, p, pull)


def push_visit_s(scn, p):
    if TRIAL["visit_us"] is not None and A.lanes_copy_runs(scn):
        return TRIAL["visit_us"] * A.US
    return _visit_s(scn, p)


A.copy_load, A.push_visit_s = copy_load, push_visit_s


def mape(recs, hardware, visit_us):
    TRIAL["visit_us"] = visit_us
    meas = np.array([r["latency_ms"]["median"] for r in recs])
    e = predict_records(recs, load_params(None, hardware)) / meas - 1
    ok = np.isfinite(e)
    push = ok & np.array([r["config"]["dispatch"] == "push" for r in recs])
    return 100 * np.mean(abs(e[ok])), 100 * np.max(abs(e[ok])), 100 * np.mean(abs(e[push])), push.sum()


def main(visits):
    sets = {"train h200-1": (training_files(), "h200-1"), **HELD}
    print("| file | n | shipped MAPE / max / push MAPE | " + " | ".join(
        f"visit {v} us: MAPE / max / push MAPE" for v in visits) + " |")
    print("|---|---:|---|" + "---|" * len(visits))
    for name, (files, hardware) in sets.items():
        recs = forward_records(files)
        cells = []
        for v in (None, *visits):
            m, x, pm, n = mape(recs, hardware, v)
            cells.append(f"{m:.2f} / {x:.1f} / {pm:.2f}")
        print(f"| {name} | {len(recs)} ({n} push) | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main([float(v) for v in sys.argv[1:]] or [0.685, 0.5])
