"""Session 76: the default knobs timed twice in one drawn-seed sweep (space_sweep
--alternate-default: first and again later in the same workload): |later / first - 1| by pass
length, the run-to-run drift a tuner's regret cannot get under (the 2-core CPU box).

    PYTHONPATH=. python mok_kernels/logs_s76/default_repeats.py FILE ...
"""
import collections
import gzip
import json
import sys

import numpy as np

bands = collections.defaultdict(list)
worst = []
for f in sys.argv[1:]:
    seen = {}
    for line in (gzip.open(f, "rt") if f.endswith(".gz") else open(f)):
        r = json.loads(line)
        if r.get("system") != "mok" or r.get("pass") != "fwd":
            continue
        c = r["config"]
        key = (r["model"]["name"], r["ep"], r["tokens"], json.dumps(r["routing"], sort_keys=True),
               c["dispatch"], c["combine"], c["minibatch"], c["comm_sms"])
        m = r["latency_ms"]["median"]
        if key in seen:
            d = m / seen[key] - 1
            b = "<0.5 ms" if m < 0.5 else ("0.5-3 ms" if m < 3 else (">3-10 ms" if m < 10 else ">=10 ms"))
            bands[b].append(abs(d))
            worst.append((abs(d), d, f.split("/")[-1], key[0], key[1], key[2], seen[key], m))
        else:
            seen[key] = m
for b in ("<0.5 ms", "0.5-3 ms", ">3-10 ms", ">=10 ms"):
    e = np.array(bands[b])
    if len(e):
        print(f"{b:9s} n {len(e):4d}  |drift| median {100 * np.median(e):5.2f}%  mean {100 * e.mean():5.2f}%  "
              f"90% {100 * np.quantile(e, 0.9):5.2f}%  max {100 * e.max():5.1f}%")
print("largest:")
for a, d, f, mname, ep, t, m0, m1 in sorted(worst, reverse=True)[:8]:
    print(f"  {100 * d:+6.1f}%  {f:20s} {mname:34s} ep{ep:<3d} {t:5d}  first {m0:.3f}  later {m1:.3f} ms")
