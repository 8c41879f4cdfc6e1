"""Session 78: the run-to-run part of the within-workload spread: the same H100 sweep measured
twice (seed 22 and its re-run), each setting's log(re-run / run) minus its workload's mean,
workloads of 3+ settings (the 2-core CPU box).

    PYTHONPATH=. python mok_kernels/logs_s78/rerun_within.py FIRST.jsonl.gz RERUN.jsonl.gz
"""
import collections
import sys

import numpy as np

from calibration.validate import group_key
from mok_model.records import read_records


def key(r):
    return group_key(r), tuple(sorted(r["config"].items()))


first = {key(r): r["latency_ms"]["median"] for r in read_records([sys.argv[1]]) if r["system"] == "mok"}
groups = collections.defaultdict(list)
for r in read_records([sys.argv[2]]):
    if r["system"] == "mok" and key(r) in first:
        groups[group_key(r)].append(np.log(r["latency_ms"]["median"] / first[key(r)]))
x = np.concatenate([np.array(v) - np.mean(v) for v in groups.values() if len(v) >= 3])
print(f"{len(x)} settings: within-workload sd of log(re-run / run) {100 * x.std():.2f}%, "
      f"{100 * x.std() / np.sqrt(2):.2f}% a run")
