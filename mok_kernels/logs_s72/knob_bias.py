"""Session 72: the shipped parameters' analytic error on held-out drawn-seed runs, within each
workload (log error minus the workload's mean: what ranks its settings), by dispatch / combine,
minibatch and comm SMs, at <= 640 and > 640 tokens per GPU (the 2-core CPU box).

    PYTHONPATH=. python mok_kernels/logs_s72/knob_bias.py HARDWARE GLOB[,GLOB...]   (knob_bias.txt)
"""
import collections
import glob
import sys

import numpy as np

from calibration.checks import shipped_params
from mok_model.records import workload_key

sys.path.insert(0, "mok_kernels/logs_s60")
from registered_drawn import predicted_mok  # noqa: E402

hw, patterns = sys.argv[1], sys.argv[2].split(",")
files = [f for p in patterns for f in sorted(glob.glob(p))
         if "gemm" not in f and "rerun" not in f and "native" not in f]
params = shipped_params(hw)
by_workload = collections.defaultdict(list)
for f in files:
    for rec, pred in zip(*predicted_mok(params, f)):
        if rec["pass"] == "fwd" and rec["precision"] == "bf16":
            by_workload[workload_key(rec)].append((rec, np.log(pred / rec["latency_ms"]["median"])))
rows = []
for runs in by_workload.values():
    if len(runs) < 3:
        continue
    mean = np.mean([e for _, e in runs])
    for rec, e in runs:
        c = rec["config"]
        rows.append(("<=640" if rec["tokens"] <= 640 else ">640", f"{c['dispatch']}/{c['combine']}",
                     c["minibatch"], c["comm_sms"], 100 * (e - mean)))
print(f"{hw}: {len(files)} files, {len(rows)} runs in {len(by_workload)} workloads")
for name, i in (("dispatch/combine", 1), ("minibatch", 2), ("comm SMs", 3)):
    groups = collections.defaultdict(list)
    for row in rows:
        groups[(row[0], str(row[i]))].append(row[4])
    print(f"  {name}:")
    for (tokens, value), devs in sorted(groups.items()):
        print(f"    {tokens:>5} {value:>9}: {np.mean(devs):+5.1f}% (n {len(devs)})")
