"""Session 57 trial: h100-1's GEMM table looked up on a mechanism fitted to the H100's own GEMM
phases (system mok-gemm) instead of h200-1's moved by the HBM ratio. The points' residual
curves stay h200-1's (the transfer's); only the four mechanism constants are fitted, on the
H100 GEMM-phase files given with --fit. Judged on H100 pass records (system mok, which no step
here reads): MAPE, max and signed error per file, shipped against the candidate.

    PYTHONPATH=. python mok_kernels/logs_s57/h100_table_trial.py --fit A.jsonl,B.jsonl \\
        --judge calibration/runs/h100/drawn22.jsonl,...
"""
import argparse
import math
import sys

import numpy as np
from scipy.optimize import least_squares

sys.path.insert(0, "mok_kernels/logs_s55")
from overhead_overlap_trial import forward_records  # noqa: E402

from calibration.gemm_table import table_records  # noqa: E402
from calibration.scoring import predict_records  # noqa: E402
from calibration.gemm_table import MECH_BOUNDS  # noqa: E402
from mok_model.gemm_table import MECHANISM, transferred_table  # noqa: E402
from mok_model.params import load_params  # noqa: E402
from mok_model.records import read_records, record_scenario  # noqa: E402


def fit_target(shipped, files):
    """The mechanism constants whose lookups (residuals as shipped) fit the H100 phases best in
    log error; the launch constant is the one measured by the phases' own launches."""
    recs = table_records(read_records(files), "h100-1", "mok-gemm")
    t = shipped.gemm_table
    scns = [record_scenario(r) for r in recs]
    meas = np.array([r["latency_ms"]["median"] * 1e-3 for r in recs])

    def table_with(x):
        mech = dict(zip(MECHANISM, np.exp(x)))
        return transferred_table(t, "h100-1", t.path, mech, "trial")

    def res(x):
        tt = table_with(x)
        launch = tt.lookup["launch_us"] * 1e-6
        return np.log([tt.scenario_seconds(s) + launch for s in scns]) - np.log(meas)

    lo = np.log([MECH_BOUNDS[k][0] for k in MECHANISM])
    hi = np.log([MECH_BOUNDS[k][1] for k in MECHANISM])
    x0 = np.clip(np.log([t.lookup[k] for k in MECHANISM]), lo, hi - 1e-9)
    r0 = res(x0)
    fit = least_squares(res, x0, bounds=(lo, hi), method="trf")
    print(f"{len(recs)} H100 GEMM-phase records; shipped lookup: MAPE "
          f"{100 * np.mean(abs(np.expm1(r0))):.1f}% signed {100 * np.mean(np.expm1(r0)):+.1f}%; "
          f"fitted: MAPE {100 * np.mean(abs(np.expm1(fit.fun))):.1f}% signed "
          f"{100 * np.mean(np.expm1(fit.fun)):+.1f}%")
    print("shipped:", {k: round(t.lookup[k], 4) for k in MECHANISM})
    print("fitted: ", {k: round(math.exp(v), 4) for k, v in zip(MECHANISM, fit.x)})
    return table_with(fit.x)


def judge(params, files):
    recs = forward_records(files)
    meas = np.array([r["latency_ms"]["median"] for r in recs])
    e = predict_records(recs, params) / meas - 1
    ok = np.isfinite(e)
    return f"{100 * np.mean(abs(e[ok])):5.2f} / {100 * np.max(abs(e[ok])):4.1f} / {100 * np.mean(e[ok]):+5.1f}"


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--fit", required=True)
    ap.add_argument("--judge", required=True)
    a = ap.parse_args()
    shipped = load_params(None, "h100-1")
    cand = shipped.with_table(fit_target(shipped, a.fit.split(",")))
    print("| pass records | shipped MAPE / max / signed | candidate |")
    print("|---|---|---|")
    for f in a.judge.split(","):
        print(f"| {f} | {judge(shipped, [f])} | {judge(cand, [f])} |", flush=True)
