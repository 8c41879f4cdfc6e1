"""Session 66: the same drawn workloads and knobs timed on an H100 and on an H200 (seeds 25-27:
calibration/runs/h100/drawnS.jsonl and calibration/runs/h200_drawn/drawnS.jsonl), per model and
system, the ratio of the H100's median to the H200's. The two cards have the same SMs and tensor
peak; the H200 has 1.43x the HBM bandwidth. A diagnostic.

    PYTHONPATH=. python mok_kernels/logs_s66/h100_vs_h200.py
"""
import json

import numpy as np

from mok_model.records import read_records


def key(r: dict) -> tuple:
    rt = r["routing"] if isinstance(r["routing"], str) else json.dumps(r["routing"], sort_keys=True)
    return (r["system"], r["model"]["name"], r["ep"], r["tokens"], rt,
            json.dumps(r.get("config", {}), sort_keys=True))


for s in (25, 26, 27):
    a = {key(r): r["latency_ms"]["median"] for r in read_records([f"calibration/runs/h100/drawn{s}.jsonl"])}
    b = {key(r): r["latency_ms"]["median"]
         for r in read_records([f"calibration/runs/h200_drawn/drawn{s}.jsonl"])}
    by: dict = {}
    for k in sorted(set(a) & set(b)):
        by.setdefault((k[1], k[0]), []).append(a[k] / b[k])
    for (m, system), v in sorted(by.items()):
        print(f"{m:34s} {system:10s} n {len(v):3d} H100/H200 median {np.median(v):.3f}  "
              f"min {min(v):.3f} max {max(v):.3f}")
