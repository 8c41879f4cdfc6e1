"""Session 72: knob_bias.py's within-workload error by setting on the space sweep's runs held out
by model (the report_space --json of logs_s72: session 72's parameters), the records the fit
reads. There every sweep timed the published default first, right after the workload's build.

    PYTHONPATH=. python mok_kernels/logs_s72/knob_bias_space.py   (output: knob_bias_space.txt)
"""
import collections
import gzip
import json

import numpy as np

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
rows = []
for runs in by_workload.values():
    if len(runs) < 3:
        continue
    mean = np.mean([e for _, e in runs])
    for rec, e in runs:
        c = rec["config"]
        rows.append(("<=640" if rec["tokens"] <= 640 else ">640", f"{c['dispatch']}/{c['combine']}",
                     c["minibatch"], c["comm_sms"], 100 * (e - mean)))
print(f"space sweep held out by model: {len(rows)} runs in {len(by_workload)} workloads")
for name, i in (("dispatch/combine", 1), ("minibatch", 2), ("comm SMs", 3)):
    groups = collections.defaultdict(list)
    for row in rows:
        groups[(row[0], str(row[i]))].append(row[4])
    print(f"  {name}:")
    for (tokens, value), devs in sorted(groups.items()):
        print(f"    {tokens:>5} {value:>9}: {np.mean(devs):+5.1f}% (n {len(devs)})")
