"""Session 66, an experiment (nothing shipped): does the GEMM phase mechanism
(mok_model/gemm_table.py) fit the kernel's measured GEMM phases better when its HBM floor also
counts each gate/up item's activation rows (block_m x H, BF16) re-read from HBM, a 1/R share of
them (R, fitted: how many items share one read through L2)? The mechanism alone, no table
residuals: its constants fitted to all points but one group, that group predicted; groups are
the H100's seeds (calibration/runs/h100/gemm_phases_drawn21..29.jsonl) and the H200 table's
models (the files mok_model/params/gemm/h200-1.json names). Prints MAPE and max error held out,
both forms, and the fitted constants on all points.

    PYTHONPATH=. python mok_kernels/logs_s66/act_floor.py     # the 2-core box, a few minutes
"""
from __future__ import annotations

import json
import math
import sys

import numpy as np
from scipy.optimize import least_squares

from calibration.gemm_table import MECH_BOUNDS, MECH_START, table_records
from mok_model.gemm_table import MECHANISM, mechanism_seconds, table_point
from mok_model.records import read_records, record_scenario

H100 = {f"seed {s}": [f"calibration/runs/h100/gemm_phases_drawn{s}.jsonl"] for s in range(21, 30)}
H200_FILES = json.load(open("mok_model/params/gemm/h200-1.json"))["records"]


def points(files: list[str], hardware: str) -> list[dict]:
    """Table points with the gate/up activation bytes beside the mechanism's features."""
    out = []
    for r in table_records(read_records(files), hardware, "mok-gemm"):
        scn = record_scenario(r)
        p = table_point(r, scn, 128, 128)
        tile = {"block_m": 128, "bn_gu": 128, **(r.get("tiles") or {})}
        # a gate/up item: block_m x 2 bn_gu over K = H; its activation rows block_m x H x 2 B
        items = sum(n for n, _ in p["mech"]["gu"])
        p["act_bytes"] = items * tile["block_m"] * scn.model.hidden * 2.0
        out.append(p)
    return out


def seconds(p: dict, mech: dict) -> float:
    f = p["mech"]
    if "act_reuse" in mech:
        f = {**f, "weight_bytes": f["weight_bytes"] + p["act_bytes"] / mech["act_reuse"]}
    return mechanism_seconds(f, {k: mech[k] for k in MECHANISM})


def fit(pts: list[dict], act: bool) -> dict:
    names = [*MECHANISM, "act_reuse"] if act else list(MECHANISM)
    bounds = {**MECH_BOUNDS, "act_reuse": (1.0, 1e4)}
    start = {**MECH_START, "act_reuse": 16.0}
    meas = np.log([p["measured_ms"] * 1e-3 for p in pts])

    def res(x):
        mech = dict(zip(names, np.exp(x)))
        return np.log([seconds(p, mech) for p in pts]) - meas

    lo = np.log([bounds[k][0] for k in names])
    hi = np.log([bounds[k][1] for k in names])
    x0 = np.clip(np.log([start[k] for k in names]), lo, hi - 1e-9)
    return {k: float(math.exp(v)) for k, v in zip(names, least_squares(res, x0, bounds=(lo, hi)).x)}


def report(label: str, groups: dict[str, list[dict]]) -> None:
    every = {False: [], True: []}
    for g, held in groups.items():
        train = [p for h, ps in groups.items() if h != g for p in ps]
        line = f"  {g:36s} n {len(held):4d}"
        for act in (False, True):
            mech = fit(train, act)
            e = [seconds(p, mech) / (p["measured_ms"] * 1e-3) - 1 for p in held]
            every[act] += e
            line += f"  {'act' if act else 'base'} MAPE {100 * np.mean(np.abs(e)):5.1f}%"
        print(line, flush=True)
    allp = [p for ps in groups.values() for p in ps]
    for act in (False, True):
        e = np.array(every[act])
        mech = fit(allp, act)
        print(f"{label} {'with activation floor' if act else 'as shipped form':24s} held out: "
              f"MAPE {100 * np.abs(e).mean():.2f}% max {100 * np.abs(e).max():.1f}%; fitted on all: "
              + ", ".join(f"{k} {v:.4g}" for k, v in mech.items()), flush=True)


def main() -> None:
    h100 = {g: points(f, "h100-1") for g, f in H100.items()}
    report("H100 (by seed)", h100)
    h200: dict[str, list[dict]] = {}
    for p in points(H200_FILES, "h200-1"):
        h200.setdefault(p["model"], []).append(p)
    if len(sys.argv) > 1 and sys.argv[1] == "--h100-only":
        return
    report("H200 (by model)", h200)


if __name__ == "__main__":
    main()
