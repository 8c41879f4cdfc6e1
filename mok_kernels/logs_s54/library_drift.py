"""Day-to-day spread of the library GEMMs alone (gemm-only records, forward, one GPU): for every
workload timed on two or more days, the max over min of its daily medians.

    PYTHONPATH=. python mok_kernels/logs_s54/library_drift.py
"""

import collections
import glob
import json
import statistics

import numpy as np


def main() -> None:
    by = collections.defaultdict(list)
    for f in sorted(glob.glob("calibration/runs/**/*.jsonl", recursive=True)):
        for line in open(f):
            r = json.loads(line)
            hw = r.get("hardware") or {}
            if (r.get("system") != "gemm-only" or r.get("pass") != "fwd"
                    or not isinstance(r.get("model"), str) or hw.get("gpus", 1) != 1):
                continue
            key = (str(hw.get("preset")), r["model"], r["ep"], r["tokens"],
                   json.dumps(r["routing"], sort_keys=True), r.get("precision"))
            by[key].append((str(r.get("date", ""))[:10], r["latency_ms"]["median"]))
    rows = []
    for key, v in by.items():
        days = sorted({d for d, _ in v})
        if len(days) > 1:
            daily = {d: statistics.median([x for dd, x in v if dd == d]) for d in days}
            rows.append((max(daily.values()) / min(daily.values()), key, daily))
    rows.sort(key=lambda r: -r[0])
    print(f"{len(rows)} workloads timed on 2+ days; max / min of their daily medians:")
    for spread, key, daily in rows[:25]:
        print(f"{spread:.3f}", key[:4], {d: round(x, 3) for d, x in daily.items()})
    s = [r[0] for r in rows]
    print(f"median spread {np.median(s):.3f}, 90th percentile {np.quantile(s, 0.9):.3f}")


if __name__ == "__main__":
    main()
