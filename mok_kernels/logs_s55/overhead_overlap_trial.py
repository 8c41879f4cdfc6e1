"""Session 55's trial of the minibatch overhead hidden in the work list's hold (not shipped).

The shipped model charges a minibatch max(tiles, list hold) + minibatch_overhead_us; the trial
(overhead_overlap.patch: analytic and simulator) charges max(tiles + overhead, list hold). With
the patch applied (`git apply mok_kernels/logs_s55/overhead_overlap.patch`):

    PYTHONPATH=. python mok_kernels/logs_s55/overhead_overlap_trial.py eval [OVERHEAD_US]
    PYTHONPATH=. python mok_kernels/logs_s55/overhead_overlap_trial.py fit

`eval`: analytic MAPE on h200-1's 13 training files and on six registered drawn-seed run files
no fit read (H200 with h200-1, H100 with h100-1), every parameter as shipped but the overhead
(given, or as shipped). `fit`: the overhead alone by least squares on relative error over the
training files, every other value as shipped (stage 2's objective). Without the patch both
read the shipped form.
"""
import json
import re
import sys

import numpy as np
from scipy.optimize import minimize_scalar

from calibration.scoring import predict_records
from mok_model.params import load_params
from mok_model.records import model_records, read_records

HELD_OUT = {"h200 drawn20": (["calibration/runs/h200_drawn/drawn20.jsonl"], "h200-1"),
            "h200 drawn21": (["calibration/runs/h200_drawn/drawn21.jsonl"], "h200-1"),
            "h200 drawn22": (["calibration/runs/h200_drawn/drawn22.jsonl"], "h200-1"),
            "h100 drawn21g": (["calibration/runs/h100/drawn21g.jsonl"], "h100-1"),
            "h100 drawn22": (["calibration/runs/h100/drawn22.jsonl"], "h100-1"),
            "h100 drawn23": (["calibration/runs/h100/drawn23.jsonl"], "h100-1")}


def training_files() -> list[str]:
    notes = json.load(open("mok_model/params/h200-1.json"))["values"]["minibatch_overhead_us"]["source"]
    return re.findall(r"'([^']+\.jsonl)'", notes)


def forward_records(files):
    recs = [r for r in read_records(files) if r["system"] == "mok" and r["pass"] == "fwd"
            and r["precision"] == "bf16"]
    return model_records(recs)[0]


def errors(recs, hardware, overhead=None, engine="analytic"):
    """pred / measured - 1 of each record, the shipped parameters (the overhead as given)."""
    p = load_params(None, hardware)
    if overhead is not None:
        p = p.with_values(minibatch_overhead_us=overhead)
    meas = np.array([r["latency_ms"]["median"] for r in recs])
    return predict_records(recs, p, engine=engine) / meas - 1


def evaluate(overhead):
    sets = {"train h200-1": (training_files(), "h200-1"), **HELD_OUT}
    for name, (files, hardware) in sets.items():
        recs = forward_records(files)
        e = errors(recs, hardware, overhead)
        ok = np.isfinite(e)
        small = ok & (np.array([r["config"]["minibatch"] for r in recs]) <= 1024)
        print(f"{name:14s} n {ok.sum():5d} MAPE {100 * np.mean(abs(e[ok])):.2f}% max "
              f"{100 * np.max(abs(e[ok])):.1f}% | minibatch <= 1,024: n {small.sum()} MAPE "
              f"{100 * np.mean(abs(e[small])):.2f}% median {100 * np.median(e[small]):+.1f}%",
              flush=True)


def fit():
    recs = forward_records(training_files())

    def loss(x):
        e = errors(recs, "h200-1", float(x))
        return float(np.mean(e[np.isfinite(e)] ** 2))
    r = minimize_scalar(loss, bounds=(0.0, 12.0), method="bounded", options={"xatol": 0.02})
    print(f"minibatch_overhead_us fitted: {r.x:.3f} us (rms relative error {np.sqrt(r.fun):.5f})")


if __name__ == "__main__":
    if sys.argv[1] == "fit":
        fit()
    else:
        evaluate(float(sys.argv[2]) if len(sys.argv) > 2 else None)
