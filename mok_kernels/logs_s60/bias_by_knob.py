"""Signed analytic error of the shipped parameters on held-out drawn-seed runs, by dispatch x
tokens and by comm SMs (session 60, the 2-core CPU box): is push dispatch at small token
counts read too fast, as the tuner's worst regrets suggest?"""
import collections
import glob
import sys

import numpy as np

from calibration.checks import shipped_params
from registered_drawn import predicted_mok

hw = sys.argv[1] if len(sys.argv) > 1 else "h200-1"
pat = ("calibration/runs/h200_drawn/drawn[0-9]*.jsonl" if hw == "h200-1"
       else "calibration/runs/h100/drawn2[5-9].jsonl")
files = [f for f in sorted(glob.glob(pat)) if "gemm" not in f and "rerun" not in f]
params = shipped_params(hw)
rows = []
for f in files:
    for r, p in zip(*predicted_mok(params, f)):
        if r["pass"] == "fwd" and r["precision"] == "bf16":
            c = r["config"]
            rows.append((f, r["tokens"], c["dispatch"], c["combine"], c["minibatch"],
                         c["comm_sms"], p / r["latency_ms"]["median"] - 1))
print(f"{hw}: {len(rows)} held-out forward BF16 MoK runs in {len(files)} files")


def table(name, key):
    g = collections.defaultdict(list)
    for row in rows:
        g[key(row)].append(row[-1])
    print(f"\nby {name}: n, median signed, mean signed, MAPE")
    for k in sorted(g):
        e = np.array(g[k])
        print(f"  {str(k):28s} {len(e):5d} {100 * np.median(e):+6.1f}% {100 * e.mean():+6.1f}% "
              f"{100 * np.abs(e).mean():5.1f}%")


def bucket(t):
    return "<=160" if t <= 160 else "<=700" if t <= 700 else "<=2100" if t <= 2100 else ">2100"


table("dispatch x tokens", lambda r: (r[2], bucket(r[1])))
table("dispatch x comm_sms (tokens <= 700)", lambda r: (r[2], r[5]) if r[1] <= 700 else ("big",))
table("dispatch x minibatch (tokens <= 700)", lambda r: (r[2], r[4]) if r[1] <= 700 else ("big",))
table("combine x tokens", lambda r: (r[3], bucket(r[1])))
