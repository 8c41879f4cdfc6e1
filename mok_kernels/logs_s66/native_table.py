"""Session 66: would an H100 GEMM table built from the H100's own GEMM phases (seeds 21-29,
calibration/runs/h100/gemm_phases_drawn21..29.jsonl) predict the MoK passes of the drawn seeds
better than the shipped, transferred one (h200-1's points on an H100 mechanism)? Writes the
candidate (table and a params copy naming it) under OUT and prints, per seed of pass records,
the analytic MAPE and the mean signed error of the heavy shapes (H >= 6,144, I >= 5,440, E >=
64) with each. The pass records of seeds 25-33 are read by no fit here (25-29's GEMM phases are
among the candidate's points). A diagnostic, nothing shipped.

    PYTHONPATH=. python mok_kernels/logs_s66/native_table.py OUT    # the 2-core box, ~3 min

With OUT/h100-1-fit.json present it also scores that: stage 2 refitted on the native table as
calibration.transfer fits h100-1 (`mok calibrate HOPPER_PASS_RUNS --base OUT/h100-1.json --out
OUT/h100-1-fit.json --hardware h100-1 --band none`, 31 s on the 2-core box).
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np

from calibration.gemm_table import build_table
from mok_model.gemm_table import write_table
from mok_model.records import read_records

PHASES = [f"calibration/runs/h100/gemm_phases_drawn{s}.jsonl" for s in range(21, 30)]
SEEDS = range(25, 34)
SHIPPED = "mok_model/params/h100-1.json"


def heavy(name: str) -> bool:
    h, i, e = (int(re.search(rf"-{c}(\d+)", name).group(1)) for c in "hie")
    return h >= 6144 and i >= 5440 and e >= 64


def rows(params: str, runs: str) -> list[tuple[str, float]]:
    """(model, signed error) of every MoK record `mok validate` scores."""
    out = subprocess.run([sys.executable, "-m", "mok_model.cli", "validate", "--params", params,
                          runs, "--json"], capture_output=True, text=True, check=True).stdout
    model = {r["id"]: r["model"]["name"] for r in read_records([runs])}
    return [(model[r["id"]], r["predicted_ms"] / r["measured_ms"] - 1)
            for r in json.loads(out)["rows"]]


def write_candidate(o: Path) -> None:
    """The native table and a copy of the shipped parameters that names it."""
    (o / "gemm").mkdir(parents=True, exist_ok=True)
    table = build_table(read_records(PHASES), "h100-1", PHASES, "mok-gemm",
                        str(o / "gemm" / "h100-1.json"))
    write_table(o / "gemm" / "h100-1.json", table)
    doc = json.loads(Path(SHIPPED).read_text())
    doc["gemm_table"] = "gemm/h100-1.json"
    (o / "h100-1.json").write_text(json.dumps(doc, indent=1))
    print(f"candidate: {len(table.points)} points, mechanism "
          + ", ".join(f"{k} {v:.4g}" for k, v in table.mechanism.items()))


def summary(name: str, r: list[tuple[str, float]]) -> str:
    e = np.array([x for _, x in r])
    hv = [x for m, x in r if heavy(m)]
    return (f"{name} MAPE {100 * np.abs(e).mean():4.1f}% max {100 * np.abs(e).max():4.1f}%"
            + (f" heavy {100 * np.mean(hv):+5.1f}%" if hv else ""))


def main(out: str) -> None:
    o = Path(out)
    if not (o / "h100-1.json").exists():
        write_candidate(o)
    cands = [("shipped", SHIPPED), ("native", str(o / "h100-1.json"))]
    if (o / "h100-1-fit.json").exists():
        cands.append(("native+fit", str(o / "h100-1-fit.json")))
    every: dict[str, list] = {name: [] for name, _ in cands}
    for s in SEEDS:
        runs = f"calibration/runs/h100/drawn{s}.jsonl"
        line = f"seed {s}:"
        for name, params in cands:
            r = rows(params, runs)
            every[name] += r
            line += "  " + summary(name, r)
        print(line, flush=True)
    for name, r in every.items():
        print(f"all ({len(r)} runs): " + summary(name, r))


if __name__ == "__main__":
    main(sys.argv[1])
