"""Session 77: does a pass's SM clock (gpu_state, read under its timed iterations) depend on its
combine and comm SMs? The median clock and power of the forward MoK runs by pass-length band,
combine and comm SMs (the 2-core CPU box).

    PYTHONPATH=. python mok_kernels/logs_s77/clock_by_combine.py FILE ...
"""
import collections
import sys

import numpy as np

from mok_model.records import read_records

rows = collections.defaultdict(list)
for r in read_records(sys.argv[1:]):
    g = r.get("gpu_state") or {}
    if r.get("system") != "mok" or "sm_mhz" not in g or r["pass"] != "fwd":
        continue
    m = r["latency_ms"]["median"]
    band = "<0.5ms" if m < 0.5 else ("0.5-3ms" if m < 3 else ">3ms")
    c = r["config"]
    rows[(band, c["combine"], c["comm_sms"])].append((g["sm_mhz"], g.get("power_w", np.nan)))
print("band     combine comm_sms   n   sm_mhz median (p10-p90)   power_w median")
for k in sorted(rows):
    a = np.array(rows[k])
    if len(a) >= 5:
        print(f"{k[0]:8s} {k[1]:5s} {k[2]:4d} {len(a):5d}  {np.median(a[:, 0]):6.0f} "
              f"({np.percentile(a[:, 0], 10):.0f}-{np.percentile(a[:, 0], 90):.0f})   {np.nanmedian(a[:, 1]):5.0f}")
