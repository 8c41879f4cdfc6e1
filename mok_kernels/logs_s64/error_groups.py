"""Where the shipped analytic model errs on held-out drawn-seed runs: signed median and MAPE by
each knob and workload field (session 64, the 2-core CPU box; no parameter was fitted on them).

    PYTHONPATH=.:mok_kernels/logs_s60 python mok_kernels/logs_s64/error_groups.py HARDWARE FILE ...
"""
import collections
import sys

import numpy as np

from mok_model.params import load_params
from registered_drawn import predicted_mok

params = load_params(None, sys.argv[1])
rows = []
for f in sys.argv[2:]:
    recs, pred = predicted_mok(params, f)
    for r, p in zip(recs, pred):
        c, m, rt = r["config"], r["model"], r["routing"]
        rows.append(({"dispatch/combine": f"{c['dispatch']}/{c['combine']}",
                      "minibatch": c["minibatch"], "comm_sms": c["comm_sms"],
                      "tokens": r["tokens"], "ep": r["ep"],
                      "routing": rt["kind"] if isinstance(rt, dict) else rt,
                      "experts/gpu": m["routed_experts"] // r["ep"],
                      "expert_width": m["expert_width"], "hidden": m["hidden"]},
                     p / r["latency_ms"]["median"] - 1))
e_all = np.array([e for _, e in rows])
print(f"{len(rows)} runs: MAPE {100 * np.abs(e_all).mean():.2f}% signed median "
      f"{100 * np.median(e_all):+.1f}%")
for field in rows[0][0]:
    groups = collections.defaultdict(list)
    for keys, e in rows:
        groups[keys[field]].append(e)
    print(f"== {field}")
    for k in sorted(groups, key=str):
        e = np.array(groups[k])
        print(f"  {k!s:>12}: n {len(e):4d} MAPE {100 * np.abs(e).mean():5.1f}% signed median "
              f"{100 * np.median(e):+5.1f}% p10 {100 * np.percentile(e, 10):+5.1f}% p90 "
              f"{100 * np.percentile(e, 90):+5.1f}%")
