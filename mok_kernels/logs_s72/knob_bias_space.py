"""Session 72: knob_bias.py's within-workload error by setting on the space sweep's runs held out
by model (the report_space --json of logs_s72: session 72's parameters), the records the fit
reads. There every sweep timed the published default first, right after the workload's build.

    PYTHONPATH=. python mok_kernels/logs_s72/knob_bias_space.py   (output: knob_bias_space.txt)
"""
import collections
import gzip
import json

import numpy as np

from knob_bias import band, knob_tables, within
from mok_model.records import workload_key

REPORT = "mok_kernels/logs_s72/report_space.json.gz"
doc = json.load(gzip.open(REPORT, "rt"))
records = {}
for f in doc["files"]:
    with (gzip.open if f.endswith(".gz") else open)(f, "rt") as lines:
        for line in lines:
            rec = json.loads(line)
            records[rec["id"]] = rec
by_workload = collections.defaultdict(list)
for fold in doc["results"]:
    if fold["by"] == "model":
        for i, measured, predicted in zip(fold["ids"], fold["measured"], fold["analytic"]):
            by_workload[workload_key(records[i])].append((records[i], np.log(predicted / measured)))
print(f"space sweep held out by model: {len(within(by_workload, band))} runs in {len(by_workload)} "
      f"workloads")
knob_tables(by_workload)
