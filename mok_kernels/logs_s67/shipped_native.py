"""Session 67: h100-1 parameter files side by side on the H100 pass records of drawn seeds 25-34
(`mok validate`, analytic; no fit read seeds 30-34's pass records or GEMM phases; 25-29's GEMM
phases are the native table's points): per seed, then pooled over 25-29 and 30-34. A diagnostic.

    PYTHONPATH=. python mok_kernels/logs_s67/shipped_native.py NAME=PARAMS ...   # ~80 s a file

shipped_native.txt: before = the shipped h100-1 (main at 89308ad), candidate = session 66's
registered h100-1_native_2026-12-06.json, shipped = a trial `calibration.transfer
--write-hopper` with HOPPER_PHASES = seeds 21-29's phases (the same numbers as the candidate;
reverted, not shipped: docs/calibration.md "Session 67").
"""
from __future__ import annotations

import sys

import numpy as np

sys.path.insert(0, "mok_kernels/logs_s66")
from native_table import heavy, rows  # noqa: E402


def main(args: list[str]) -> None:
    cands = [tuple(a.split("=", 1)) for a in args]
    every = {name: {"25-29": [], "30-34": []} for name, _ in cands}
    for s in range(25, 35):
        line = f"seed {s}:"
        for name, params in cands:
            r = rows(params, f"calibration/runs/h100/drawn{s}.jsonl")
            every[name]["25-29" if s < 30 else "30-34"] += r
            e = np.array([x for _, x in r])
            hv = [x for m, x in r if heavy(m)]
            line += (f"  {name} {100 * np.abs(e).mean():4.1f}% max {100 * np.abs(e).max():4.1f}%"
                     + (f" heavy {100 * np.mean(hv):+5.1f}%" if hv else ""))
        print(line, flush=True)
    for name, groups in every.items():
        for g, r in groups.items():
            e = np.array([x for _, x in r])
            hv = [x for m, x in r if heavy(m)]
            print(f"{name:>9} seeds {g} ({len(e)} runs): MAPE {100 * np.abs(e).mean():.2f}% max "
                  f"{100 * np.abs(e).max():.1f}% signed {100 * e.mean():+.2f}%"
                  + (f" heavy {100 * np.mean(hv):+.1f}% ({len(hv)})" if hv else ""))


if __name__ == "__main__":
    main(sys.argv[1:])
