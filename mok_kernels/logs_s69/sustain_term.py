"""Session 69: the long-phase term inside the GEMM table's mechanism (mok_model/gemm_table.py
`sustained`), fitted with the table's other constants, tested on the drawn seeds' GEMM phases
(none of them in any fit but the H100 transfer's seed 21). A diagnostic: it writes nothing.

    PYTHONPATH=. python mok_kernels/logs_s69/sustain_term.py [--h100-seeds 21,...]

H200: h200-1's table rebuilt from its record files (the shipped table's `records`) with the
4-constant mechanism (the shipped fit, reproduced) and with the 6-constant one; each scored on
calibration/runs/h200_drawn/gemm_phases_drawn*.jsonl. H100: each table transferred as
calibration/transfer.py does (hbm_gbps and tensor_eff fitted to the H100 phases of the fit seeds;
with the term, its two constants as the H200 fitted them, or fitted too), scored on the other
seeds' phases in calibration/runs/h100/gemm_phases_drawn*.jsonl.
"""
from __future__ import annotations

import argparse
import glob
import json
import re

import numpy as np

from calibration.gemm_table import build_table, fit_lookup, fit_mechanism, table_records
from calibration.transfer import HOPPER_FREE
from mok_model.gemm_table import SUSTAIN, GemmTable, transferred_table
from mok_model.presets import load_hardware
from mok_model.records import read_records, record_scenario


def seed_of(path: str) -> str:
    return re.search(r"drawn(\d+)", path)[1]


def phases(files: list[str], hw: str) -> dict[str, list]:
    """{seed: [(scenario, measured s)]} of the mok-gemm records in `files`."""
    out = {}
    for f in files:
        recs = table_records(read_records([f]), hw, "mok-gemm")
        out[seed_of(f)] = [(record_scenario(r), r["latency_ms"]["median"] * 1e-3) for r in recs]
    return out


def score(t: GemmTable, data: list) -> np.ndarray:
    """Signed errors (predicted / measured - 1) and measured seconds."""
    launch = t.lookup["launch_us"] * 1e-6
    return np.array([((t.scenario_seconds(s) + launch) / m - 1, m) for s, m in data])


def line(name: str, e: np.ndarray) -> str:
    err, ms = e[:, 0], e[:, 1] * 1e3
    bins = [(0, 2), (2, 10), (10, 1e9)]
    parts = [f"{lo:g}-{hi:g} ms {100 * err[(ms >= lo) & (ms < hi)].mean():+5.1f}% "
             f"(n {((ms >= lo) & (ms < hi)).sum()})" if ((ms >= lo) & (ms < hi)).any() else ""
             for lo, hi in bins]
    return (f"  {name:28s} MAPE {100 * np.abs(err).mean():5.2f}%  max {100 * np.abs(err).max():5.1f}%  "
            f"signed by duration: {'; '.join(p for p in parts if p)}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--h100-seeds", default="21", help="seeds the H100 transfer is fitted on")
    a = ap.parse_args()
    shipped = json.load(open("mok_model/params/gemm/h200-1.json"))
    files = shipped["records"]
    recs = read_records(files)
    t4 = build_table(recs, "h200-1", files, "mok-gemm", path="mok_model/params/gemm/h200-1.json")
    print("table file's mechanism:", {k: round(v, 4) for k, v in shipped["mechanism"].items()})
    print("rebuilt 4-constant:", {k: round(v, 4) for k, v in t4.mechanism.items()})
    m6 = fit_mechanism(t4.points, sustain=True)
    print("6-constant:        ", {k: round(v, 4) for k, v in m6.items()})
    t6 = GemmTable("h200-1", t4.points, t4.records, t4.path, "", "absolute", m6)
    own = [(None, p) for p in t4.points]
    for name, t in (("4-constant", t4), ("6-constant", t6)):
        meas = np.array([p["measured_ms"] * 1e-3 for _, p in own])
        from mok_model.gemm_table import points_mechanism_seconds
        mech = np.array(points_mechanism_seconds([p["mech"] for _, p in own], t.mechanism))
        print(line(f"table points, {name} mech", np.c_[mech / meas - 1, meas]))

    print("\nH200 drawn phases (held out of every fit)")
    h200 = phases(sorted(glob.glob("calibration/runs/h200_drawn/gemm_phases_drawn*.jsonl")), "h200-1")
    for seed, data in h200.items():
        print(f" seed {seed} ({len(data)} phases)")
        for name, t in (("4-constant", t4), ("6-constant", t6)):
            print(line(name, score(t, data)))
    every = [d for v in h200.values() for d in v]
    print(" all")
    for name, t in (("4-constant", t4), ("6-constant", t6)):
        print(line(name, score(t, every)))

    fit_seeds = a.h100_seeds.split(",")
    h100 = phases(sorted(glob.glob("calibration/runs/h100/gemm_phases_drawn*.jsonl")), "h100-1")
    fit_recs = read_records([f"calibration/runs/h100/gemm_phases_drawn{s}.jsonl" for s in fit_seeds])
    ratio = load_hardware("h100-1").hbm_tbps / load_hardware("h200-1").hbm_tbps
    path = "mok_model/params/gemm/h100-1.json"
    variants = {}
    for name, src, free in (("4-constant", t4, HOPPER_FREE),
                            ("6, H200's term", t6, HOPPER_FREE),
                            ("6, term refitted", t6, HOPPER_FREE + SUSTAIN)):
        moved = {**src.mechanism, "hbm_gbps": src.mechanism["hbm_gbps"] * ratio}
        mech, how = fit_lookup(src, "h100-1", path, moved, fit_recs, free=free)
        variants[name] = transferred_table(src, "h100-1", path, mech, "")
        print(f"H100 {name}: {({k: round(v, 4) for k, v in mech.items()})}, fit MAPE "
              f"{100 * how['mape_after']:.1f}% on {how['n']}")
    print(f"\nH100 drawn phases (fit seeds {a.h100_seeds} marked *)")
    for seed, data in h100.items():
        print(f" seed {seed}{'*' if seed in fit_seeds else ''} ({len(data)} phases)")
        for name, t in variants.items():
            print(line(name, score(t, data)))
    held = [d for s, v in h100.items() if s not in fit_seeds for d in v]
    print(" all held out")
    for name, t in variants.items():
        print(line(name, score(t, held)))


if __name__ == "__main__":
    main()
