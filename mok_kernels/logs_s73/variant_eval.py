"""Session 73: the held-out drawn seeds (H100 25-39, H200 28-36) read by the shipped parameters
and by variants of them (values changed, no refit): analytic MAPE, max error, mean Spearman and
regret within workloads (the tuner's pick, the argmin), to judge a model change before a refit
(the 2-core CPU box).

    PYTHONPATH=.:mok_kernels/logs_s72 python mok_kernels/logs_s73/variant_eval.py [HW=FILE] [NAME=VALUE ...]

HW=FILE reads hardware HW (h100-1, h200-1) with that parameters file instead of the shipped one,
and only HW.
"""
import sys

import numpy as np
from knob_bias import drawn_errors
from push_bias import SEEDS
from scipy.stats import spearmanr

from calibration.checks import shipped_params
from mok_model.params import read_params


def summary(by_workload: dict) -> str:
    """MAPE, max error, mean within-workload Spearman and argmin regret of drawn_errors' runs."""
    errs, rhos, regrets = [], [], []
    for runs in by_workload.values():
        meas = np.array([r["latency_ms"]["median"] for r, _ in runs])
        pred = meas * np.exp([e for _, e in runs])
        errs += list(pred / meas - 1)
        if len(runs) >= 3:
            rhos.append(spearmanr(pred, meas)[0])
            regrets.append(meas[np.argmin(pred)] / meas.min() - 1)
    errs = np.abs(errs)
    return (f"MAPE {100 * errs.mean():.2f}% max {100 * errs.max():.1f}%; Spearman {np.nanmean(rhos):.3f}; "
            f"regret mean {100 * np.mean(regrets):.2f}% max {100 * np.max(regrets):.1f}% "
            f"({len(regrets)} workloads)")


if __name__ == "__main__":
    pairs = [a.split("=") for a in sys.argv[1:]]
    files = {k: v for k, v in pairs if k in SEEDS}
    changes = {k: float(v) for k, v in pairs if k not in SEEDS}
    for hw, patterns in SEEDS.items():
        if files and hw not in files:
            continue
        base = read_params(files[hw]) if hw in files else shipped_params(hw)
        params = base.with_values(**changes) if changes else base
        print(f"{hw} {files.get(hw, 'shipped')} {changes or ''}: "
              f"{summary(drawn_errors(hw, patterns, params)[1])}", flush=True)
