"""Session 58, for session 59's refit: the H100 GEMM lookup's constants fitted to seed 21's phases
(shipped) or to seeds 21-24's (measured this session; seed 25's kept out), two constants
(shipped) or all four. Each: the phases of each seed read by a fit to the other seeds' (leave one
seed out), and the analytic MAPE of seed 25's pass runs (registered blind test; no fit reads them)
with the shipped stage-2 values.

    PYTHONPATH=. python mok_kernels/logs_s58/h100_mech_more.py
"""

import numpy as np
from drawn import forward_records

from calibration.gemm_table import fit_lookup, table_records
from calibration.scoring import predict_records
from mok_model.gemm_table import transferred_table
from mok_model.params import load_params
from mok_model.records import read_records, record_scenario

src = load_params(None, "h200-1").gemm_table
moved = {**src.mechanism, "hbm_gbps": src.mechanism["hbm_gbps"] * 3.35 / 4.8}
shipped = load_params(None, "h100-1")
phases = {s: table_records(read_records([f"calibration/runs/h100/gemm_phases_drawn{s}.jsonl"]),
                           "h100-1", "mok-gemm") for s in (21, 22, 23, 24)}
seed25 = forward_records(["calibration/runs/h100/drawn25.jsonl"])
meas25 = np.array([r["latency_ms"]["median"] for r in seed25])
FREE = {"two (shipped)": ("hbm_gbps", "tensor_eff"),
        "four": ("tensor_eff", "item_us", "hbm_gbps", "launch_us")}


def phase_errors(mech, rs):
    t = transferred_table(src, "h100-1", "x.json", mech, "")
    return np.array([(t.scenario_seconds(record_scenario(r)) + mech["launch_us"] * 1e-6)
                     / (r["latency_ms"]["median"] * 1e-3) - 1 for r in rs])


print("| phases fitted | constants | n | phases, leave one seed out: MAPE | seed 25 passes: MAPE | mechanism |")
print("|---|---|---:|---:|---:|---|")
for seeds in ((21,), (21, 22, 23, 24)):
    rs = [r for s in seeds for r in phases[s]]
    for name, free in FREE.items():
        if len(seeds) > 1:
            loo = np.concatenate([phase_errors(fit_lookup(src, "h100-1", "x.json", moved,
                                                          [r for s in seeds if s != o
                                                           for r in phases[s]], free=free)[0],
                                               phases[o]) for o in seeds])
            loo_s = f"{100 * np.mean(np.abs(loo)):.1f}%"
        else:
            loo_s = "-"
        mech = fit_lookup(src, "h100-1", "x.json", moved, rs, free=free)[0]
        p = shipped.with_table(transferred_table(src, "h100-1", shipped.gemm_table.path, mech, ""))
        e = predict_records(seed25, p) / meas25 - 1
        print(f"| seeds {','.join(map(str, seeds))} | {name} | {len(rs)} | {loo_s} | "
              f"{100 * np.mean(np.abs(e)):.2f}% | "
              + ", ".join(f"{k} {v:.4g}" for k, v in mech.items()) + " |", flush=True)
