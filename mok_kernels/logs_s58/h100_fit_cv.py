"""Session 58: should h100-1 be fitted on the H100's own pass runs? Leave one group of H100 BF16
pass files out in turn (a drawn seed, or the push grids), fit h100-1's stage-2 parameters from
the shipped file on the others (`mok calibrate --base`), and score the group left out with
`mok validate` against the shipped (transferred) h100-1. Free sets: the stage-2 defaults, and
narrower ones.

    PYTHONPATH=. python mok_kernels/logs_s58/h100_fit_cv.py
"""

import json
import subprocess
import sys
import tempfile

R = "calibration/runs/h100/"
GROUPS = {
    "seed8": ["drawn8"],
    "seed9": ["drawn9"],
    "seed21": ["drawn21", "drawn21g"],
    "seed22": ["drawn22", "drawn22_rerun"],
    "seed23": ["drawn23"],
    "seed24": ["drawn24"],
    "push": ["push_lanes", "push_binds"],
}
FREE = {
    "defaults": None,
    "copy3": "mok_fixed_us,copy_slowdown_beside_gemm,copy_gbps_per_sm",
    "overheads": "mok_fixed_us,minibatch_overhead_us",
}
MOK = [sys.executable, "-m", "mok_model.cli"]


def files(names):
    return [R + n + ".jsonl" for n in names]


def validate(params, names):
    out = subprocess.run(
        MOK + ["validate", "--params", params, "--json"] + files(names),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    d = json.loads(out)
    return d["n"], d["mape"], d["max_ape"]


tmp = tempfile.mkdtemp()
print("| held out | n | shipped MAPE / max | " + " | ".join(f"{k} MAPE / max" for k in FREE) + " |")
print("|---|---:|---|" + "---|" * len(FREE))
tot = {k: [] for k in ["shipped", *FREE]}
for g, names in GROUPS.items():
    train = [n for h, ns in GROUPS.items() if h != g for n in ns]
    n, m0, x0 = validate("mok_model/params/h100-1.json", names)
    tot["shipped"].append((n, m0, x0))
    row = f"| {g} | {n} | {100 * m0:.2f} / {100 * x0:.1f} |"
    for k, free in FREE.items():
        out = f"{tmp}/{g}_{k}.json"
        cmd = (
            MOK
            + ["calibrate"]
            + files(train)
            + [
                "--base",
                "mok_model/params/h100-1.json",
                "--hardware",
                "h100-1",
                "--band",
                "none",
                "--out",
                out,
            ]
        )
        if free:
            cmd += ["--free", free]
        subprocess.run(cmd, capture_output=True, text=True, check=True)
        n, m, x = validate(out, names)
        tot[k].append((n, m, x))
        row += f" {100 * m:.2f} / {100 * x:.1f} |"
    print(row, flush=True)
row = "| all (record-weighted) | %d |" % sum(t[0] for t in tot["shipped"])
for v in tot.values():
    n = sum(t[0] for t in v)
    row += " %.2f / %.1f |" % (100 * sum(t[0] * t[1] for t in v) / n, 100 * max(t[2] for t in v))
print(row)
