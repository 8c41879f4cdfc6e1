"""Session 59: refit h100-1's GEMM lookup and its stage-2 terms together. The lookup's weight
stream and tensor efficiency fitted to the H100's GEMM phases of seed 21 (shipped) or seeds
21-24 (seeds 25-26's phases kept out), then the stage-2 terms fitted on that table to the
H100 pass runs the shipped fit reads (calibration.transfer.HOPPER_PASS_RUNS; `mok calibrate
--base`, --band none). Each candidate read on seeds 25 and 26's pass runs, which no fit reads
(both were registered blind tests of the shipped fit: this comparison is held out, not blind)
and on the GEMM phases of seeds 25-26.

    PYTHONPATH=. python mok_kernels/logs_s59/h100_joint.py
"""

import contextlib
import io
import tempfile
from pathlib import Path

import numpy as np

from calibration.cli import calibrate_cli
from calibration.gemm_table import fit_lookup, table_records
from calibration.scoring import predict_records
from calibration.transfer import HOPPER_FREE, HOPPER_PASS_RUNS, hopper_params
from mok_model.gemm_table import transferred_table, write_table
from mok_model.params import read_params, write_params
from mok_model.records import read_records, record_scenario

H = "calibration/runs/h100/"
moved_params = hopper_params()
src = read_params("mok_model/params/h200-1.json").gemm_table
moved = {**src.mechanism, "hbm_gbps": src.mechanism["hbm_gbps"] * 3.35 / 4.8}
phases = {s: table_records(read_records([f"{H}gemm_phases_drawn{s}.jsonl"]), "h100-1", "mok-gemm")
          for s in (21, 22, 23, 24, 25, 26)}


def forward(path):
    return [r for r in read_records([path]) if r["system"] == "mok" and r.get("pass", "fwd") == "fwd"
            and r.get("precision", "bf16") == "bf16"]


held = {s: forward(f"{H}drawn{s}.jsonl") for s in (25, 26)}


def phase_mape(mech, rs):
    t = transferred_table(src, "h100-1", "x.json", mech, "")
    e = [(t.scenario_seconds(record_scenario(r)) + mech["launch_us"] * 1e-6)
         / (r["latency_ms"]["median"] * 1e-3) - 1 for r in rs]
    return 100 * float(np.mean(np.abs(e)))


def score(p, recs):
    meas = np.array([r["latency_ms"]["median"] for r in recs])
    e = predict_records(recs, p) / meas - 1
    return f"{100 * np.mean(np.abs(e)):.2f}% (max {100 * np.max(np.abs(e)):.1f}%)"


print("| lookup phases | stage 2 | seed 25 passes | seed 26 passes | phases 25-26 |")
print("|---|---|---:|---:|---:|")
with tempfile.TemporaryDirectory(dir=".") as tmp:
    for seeds in ((21,), (21, 22, 23, 24)):
        rs = [r for s in seeds for r in phases[s]]
        mech = fit_lookup(src, "h100-1", "x.json", moved, rs, free=HOPPER_FREE)[0]
        tpath = Path(tmp) / f"gemm{len(seeds)}.json"
        table = transferred_table(src, "h100-1", str(tpath), mech, "trial")
        write_table(tpath, table)
        base = Path(tmp) / f"base{len(seeds)}.json"
        write_params(base, moved_params.with_table(table), "trial: transferred")
        fitted = Path(tmp) / f"fit{len(seeds)}.json"
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            assert calibrate_cli([*HOPPER_PASS_RUNS, "--base", str(base), "--out", str(fitted),
                                  "--hardware", "h100-1", "--band", "none"]) == 0
        ph = phase_mape(mech, phases[25] + phases[26])
        for label, path in (("transferred", base), ("fitted", fitted)):
            p = read_params(path)
            print(f"| seeds {','.join(map(str, seeds))} | {label} | {score(p, held[25])} | "
                  f"{score(p, held[26])} | {ph:.1f}% |", flush=True)
