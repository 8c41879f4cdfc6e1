"""Session 57: which of the H100 GEMM lookup's four mechanism constants to fit to the H100's own
GEMM phases (calibration.gemm_table.fit_lookup `free`). For each choice: the phases of each of
seed 21's shapes read by a fit to the other shapes' (leave one shape out), and the H100 pass
files (none read by any fit) read with the fit to all of them. Baseline: h200-1's mechanism with
the weight stream x the HBM ratio (what h100-1 shipped before session 57).

    PYTHONPATH=. python mok_kernels/logs_s57/h100_mech_variants.py
"""
import glob
import sys

import numpy as np

sys.path.insert(0, "mok_kernels/logs_s55")
from overhead_overlap_trial import forward_records  # noqa: E402

from calibration.gemm_table import fit_lookup, table_records  # noqa: E402
from calibration.scoring import predict_records  # noqa: E402
from calibration.transfer import HOPPER_PHASES  # noqa: E402
from mok_model.gemm_table import transferred_table  # noqa: E402
from mok_model.params import load_params  # noqa: E402
from mok_model.records import read_records, record_scenario  # noqa: E402

h200 = load_params(None, "h200-1")
src = h200.gemm_table
moved = {**src.mechanism, "hbm_gbps": src.mechanism["hbm_gbps"] * 3.35 / 4.8}
recs = table_records(read_records(list(HOPPER_PHASES)), "h100-1", "mok-gemm")
shapes = sorted({r["model"]["name"] for r in recs})
VARIANTS = {"HBM ratio (none fitted)": (), "hbm_gbps": ("hbm_gbps",),
            "hbm_gbps, tensor_eff": ("hbm_gbps", "tensor_eff"),
            "all four": ("tensor_eff", "item_us", "hbm_gbps", "launch_us")}
PASS = [f for f in sorted(glob.glob("calibration/runs/h100/*.jsonl")) if "gemm_phases" not in f]
shipped = load_params(None, "h100-1")


def phase_errors(mech, rs):
    t = transferred_table(src, "h100-1", "x.json", mech, "")
    return np.array([(t.scenario_seconds(record_scenario(r)) + mech["launch_us"] * 1e-6)
                     / (r["latency_ms"]["median"] * 1e-3) - 1 for r in rs])


def fitted(free, rs):
    return fit_lookup(src, "h100-1", "x.json", moved, rs, free=free)[0] if free else moved


print("| constants fitted | phases, leave one shape out: MAPE | " + " | ".join(
    f.split("/")[-1][:-6] for f in PASS) + " |")
print("|---|---:|" + "---:|" * len(PASS))
files = {f: forward_records([f]) for f in PASS}
for name, free in VARIANTS.items():
    loo = np.concatenate([phase_errors(fitted(free, [r for r in recs if r["model"]["name"] != s]),
                                       [r for r in recs if r["model"]["name"] == s]) for s in shapes])
    table = transferred_table(src, "h100-1", shipped.gemm_table.path, fitted(free, recs), "")
    p = shipped.with_table(table)
    cells = []
    for rs in files.values():
        e = predict_records(rs, p) / np.array([r["latency_ms"]["median"] for r in rs]) - 1
        cells.append(f"{100 * np.mean(np.abs(e[np.isfinite(e)])):.2f}")
    print(f"| {name} | {100 * np.mean(np.abs(loo)):.1f}% | " + " | ".join(cells) + " |", flush=True)
