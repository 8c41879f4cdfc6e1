"""Session 72: the shipped parameters' analytic error on held-out drawn-seed runs, within each
workload (log error minus the workload's mean: what ranks its settings), by dispatch / combine,
minibatch and comm SMs, at <= 640 and > 640 tokens per GPU (the 2-core CPU box). Its helpers
serve knob_bias_space.py and push_bias.py too.

    PYTHONPATH=. python mok_kernels/logs_s72/knob_bias.py HARDWARE GLOB[,GLOB...]   (knob_bias.txt)
"""
import collections
import glob
import sys

import numpy as np

from calibration.checks import shipped_params
from mok_model.records import workload_key

KNOBS = (("dispatch/combine", lambda c: f"{c['dispatch']}/{c['combine']}"),
         ("minibatch", lambda c: str(c["minibatch"])), ("comm SMs", lambda c: str(c["comm_sms"])))


def band(rec: dict) -> str:
    return "<=640" if rec["tokens"] <= 640 else ">640"


def drawn_errors(hw: str, patterns: list[str], params=None) -> tuple[int, dict]:
    """(files read, {workload: [(record, log(predicted / measured))]}) of the forward BF16 MoK
    runs of the drawn-seed files matching `patterns`, with `params` (default: hardware `hw`'s
    shipped parameters)."""
    sys.path.insert(0, "mok_kernels/logs_s60")
    from registered_drawn import predicted_mok

    files = [f for p in patterns for f in sorted(glob.glob(p))
             if "gemm" not in f and "rerun" not in f and "native" not in f]
    params = shipped_params(hw) if params is None else params
    by_workload = collections.defaultdict(list)
    for f in files:
        for rec, pred in zip(*predicted_mok(params, f)):
            if rec["pass"] == "fwd" and rec["precision"] == "bf16":
                by_workload[workload_key(rec)].append((rec, np.log(pred / rec["latency_ms"]["median"])))
    return len(files), by_workload


def within(by_workload: dict, key) -> list[tuple]:
    """(key(record), its error minus its workload's mean, in %) of every run in a workload of 3+
    runs whose key is not None."""
    rows = []
    for runs in by_workload.values():
        if len(runs) < 3:
            continue
        mean = np.mean([e for _, e in runs])
        rows += [(key(rec), 100 * (e - mean)) for rec, e in runs if key(rec) is not None]
    return rows


def print_groups(rows: list[tuple], label) -> None:
    """Each key's mean deviation and count, sorted by key, a line `label(key)` each."""
    groups = collections.defaultdict(list)
    for k, dev in rows:
        groups[k].append(dev)
    for k, devs in sorted(groups.items()):
        print(f"{label(k)}: {np.mean(devs):+5.1f}% (n {len(devs)})")


def knob_tables(by_workload: dict) -> None:
    """The within-workload deviation by token band and each knob's value (KNOBS)."""
    for name, value in KNOBS:
        print(f"  {name}:")
        print_groups(within(by_workload, lambda rec, v=value: (band(rec), v(rec["config"]))),
                     lambda k: f"    {k[0]:>5} {k[1]:>9}")


if __name__ == "__main__":
    hw = sys.argv[1]
    n_files, by_workload = drawn_errors(hw, sys.argv[2].split(","))
    print(f"{hw}: {n_files} files, {len(within(by_workload, band))} runs in {len(by_workload)} workloads")
    knob_tables(by_workload)
