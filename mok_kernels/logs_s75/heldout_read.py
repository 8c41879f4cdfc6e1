"""Session 75: a card's held-out drawn seeds (forward BF16 MoK runs) read with parameter files:
MAPE, max, mean within-workload Spearman and the argmin regret among each workload's measured
settings, ties as the tuner breaks them (calibration.registered.pick_regrets; the 2-core CPU box).

    PYTHONPATH=.:mok_kernels/logs_s60 python mok_kernels/logs_s75/heldout_read.py h200-1 shipped FILE.json ...
    PYTHONPATH=.:mok_kernels/logs_s60 python mok_kernels/logs_s75/heldout_read.py h100-1 shipped FILE.json ...

h200-1: seeds 34-49 of calibration/runs/h200_drawn/ (28-33 are fitted since session 75);
h100-1: seeds 25-49 of calibration/runs/h100/ (its fit reads seeds 8-9 and 21-24).
"""
import glob
import sys

import numpy as np
from registered_drawn import predicted_mok

from calibration.checks import shipped_params
from calibration.registered import pick_regrets
from calibration.validate import grouped_spearman
from mok_model.params import read_params

HELD_OUT = {"h200-1": ["calibration/runs/h200_drawn/drawn3[4-9].jsonl*",
                       "calibration/runs/h200_drawn/drawn4[0-9].jsonl*"],
            "h100-1": ["calibration/runs/h100/drawn2[5-9].jsonl*", "calibration/runs/h100/drawn3[0-9].jsonl*",
                       "calibration/runs/h100/drawn4[0-9].jsonl*"]}


def read(hw: str, params) -> str:
    files = [f for p in HELD_OUT[hw] for f in sorted(glob.glob(p))
             if "gemm" not in f and "rerun" not in f and "native" not in f]
    recs, pred = [], []
    for f in files:
        r, q = predicted_mok(params, f)
        keep = [i for i, x in enumerate(r) if x["pass"] == "fwd" and x["precision"] == "bf16"]
        recs += [r[i] for i in keep]
        pred += [q[i] for i in keep]
    m, q = np.array([x["latency_ms"]["median"] for x in recs]), np.array(pred)
    e = np.abs(q / m - 1)
    rho, groups = grouped_spearman(recs, m, q)
    reg = np.array(pick_regrets(recs, pred))
    return (f"n {len(recs)} ({len(files)} files) MAPE {100 * e.mean():.2f}% max {100 * e.max():.1f}%; "
            f"Spearman {rho:.3f} ({groups}); argmin regret mean {100 * reg.mean():.2f}% max "
            f"{100 * reg.max():.1f}% ({len(reg)})")


if __name__ == "__main__":
    hw = sys.argv[1]
    for name in sys.argv[2:]:
        print(f"{hw} {name}: {read(hw, shipped_params(hw) if name == 'shipped' else read_params(name))}",
              flush=True)
