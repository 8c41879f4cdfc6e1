"""Session 58: per drawn workload timed with both dispatch modes, the mean error of its push-dispatch
settings minus that of its pull ones (shipped parameters, analytic), with the workload's features.

    PYTHONPATH=. python mok_kernels/logs_s58/push_pull_gap.py
"""

from collections import defaultdict

import numpy as np
from drawn import predicted
from mok_model.records import workload_key

rows = []
for name, _, recs, meas, pred in predicted():
    g = defaultdict(lambda: defaultdict(list))
    for r, e in zip(recs, pred / meas - 1):
        g[workload_key(r)[:8]][r["config"]["dispatch"]].append(e)
        g[workload_key(r)[:8]]["rec"] = r
    for d in g.values():
        if d["push"] and d["pull"]:
            r = d["rec"]
            m = r["model"]
            rows.append(
                (
                    np.mean(d["push"]) - np.mean(d["pull"]),
                    name[:4],
                    m["hidden"],
                    m["expert_width"],
                    m["routed_experts"] // r["ep"],
                    m["top_k"],
                    r["ep"],
                    r["tokens"],
                    str(r["routing"].get("kind")),
                )
            )
rows.sort()
for r in rows:
    print("%+6.1f %s H%-5d I%-5d E/P%-4d k%-3d ep%-3d n%-5d %s" % ((100 * r[0],) + r[1:]))
a = np.array([r[0] for r in rows])
print("n", len(a), "mean %+.1f median %+.1f" % (100 * a.mean(), 100 * np.median(a)))
for t in sorted({r[7] for r in rows}):
    s = np.array([r[0] for r in rows if r[7] == t])
    print(t, len(s), "%+.1f" % (100 * np.median(s)))
for lo, hi in ((0, 3000), (3000, 5000), (5000, 9000)):
    s = np.array([r[0] for r in rows if lo <= r[2] < hi])
    print("H", lo, hi, len(s), "%+.1f" % (100 * np.median(s)))
