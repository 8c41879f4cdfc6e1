"""Session 71: the held-out tuner regret of `python -m calibration.report_space --json` by token
band (calibration.noise BANDS), beside the drift regret floor of the same records.

    PYTHONPATH=. python mok_kernels/logs_s71/regret_bands.py REPORT.json[.gz]

(session 71: mok_kernels/logs_s71/report_space.json.gz, the report of docs/calibration.md "Session 71")
"""

import gzip
import json
import re
import sys

import numpy as np

from calibration.noise import band

doc = json.load((gzip.open if sys.argv[1].endswith(".gz") else open)(sys.argv[1], "rt"))
for by in ("model", "ep"):
    per: dict[str, list[float]] = {}
    for fold in doc["results"]:
        if fold["by"] != by:
            continue
        for w in fold["regret4"]:
            tokens = int(re.search(r" n(\d+) ", w["workload"]).group(1))
            per.setdefault(band(tokens), []).append(w["regret"])
    for label in ("<=128", "<=512", "<=2048", ">2048"):
        v = np.array(per.get(label, []))
        if len(v):
            print(f"held out by {by:5s} tokens {label:>6s}: {len(v):4d} workloads, regret mean "
                  f"{100 * v.mean():.2f}%, max {100 * v.max():.1f}%, above 3%: {100 * (v > 0.03).mean():.1f}%")
