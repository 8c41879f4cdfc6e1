"""Session 69: the refit with the long-phase term against the held-out pass files, before and
after (`mok validate --json`, analytic and simulator): the H200's drawn seeds 28-36 and the H100's
25-35, none read by any fit. OLD is a checkout of the commit before the refit.

    PYTHONPATH=. python mok_kernels/logs_s69/pass_test.py OLD_CHECKOUT [NEW_CHECKOUT] [ENGINES]

NEW_CHECKOUT (default: here) holds the parameters tested; ENGINES e.g. "analytic" (default both).
PASS_FILES="h100-1=GLOB,GLOB;h200-1=GLOB" (session 70) tests those files instead.
"""
import glob
import json
import os
import re
import subprocess
import sys

import numpy as np

OLD = sys.argv[1]
NEW = sys.argv[2] if len(sys.argv) > 2 else "."
ENGINES = sys.argv[3].split(",") if len(sys.argv) > 3 else ["analytic", "sim"]
SETS = {"h200-1": [f"calibration/runs/h200_drawn/drawn{s}.jsonl.gz" for s in range(28, 37)],
        "h100-1": sorted(f for f in glob.glob("calibration/runs/h100/drawn*.jsonl*")
                         if 25 <= int(re.search(r"drawn(\d+)", f)[1]) <= 35
                         and "native" not in f and "gemm" not in f)}
if os.environ.get("PASS_FILES"):
    SETS = {hw: sorted({f for g in gs.split(",") for f in glob.glob(g)}) for hw, gs in
            (item.split("=", 1) for item in os.environ["PASS_FILES"].split(";"))}


def validate(root: str, hw: str, files: list[str], engine: str) -> dict:
    env = {**os.environ, "PYTHONPATH": root, "MOK_PROGRESS": "0"}
    out = subprocess.run([sys.executable, "-m", "mok_model.cli", "validate", "--params",
                          f"{root}/mok_model/params/{hw}.json", "--engine", engine, "--json",
                          *[os.path.abspath(f) for f in files]],
                         cwd=root, env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def long_rows(doc: dict) -> str:
    rows = doc["rows"]
    key = "measured_ms" if "measured_ms" in rows[0] else None
    if key is None:
        return ""
    m = np.array([r["measured_ms"] for r in rows])
    p = np.array([r["predicted_ms"] for r in rows])
    out = []
    for lo, hi in ((0, 2), (2, 10), (10, 1e9)):
        sel = (m >= lo) & (m < hi)
        if sel.any():
            out.append(f"{lo:g}-{hi:g} ms {100 * (p[sel] / m[sel] - 1).mean():+5.1f}% (n {sel.sum()})")
    return "; ".join(out)


for hw, files in SETS.items():
    for engine in ENGINES:
        print(f"{hw} {engine}")
        for f in files + ["pooled"]:
            fs = files if f == "pooled" else [f]
            name = "pooled" if f == "pooled" else re.search(r"drawn\d+", f)[0]
            for label, root in (("before", OLD), ("after ", NEW)):
                d = validate(root, hw, fs, engine)
                print(f"  {name:8s} {label} n {d['n']:4d} MAPE {100 * d['mape']:5.2f}% max "
                      f"{100 * d['max_ape']:5.1f}% Spearman {d['spearman']:.3f}  signed by pass "
                      f"time: {long_rows(d)}")
