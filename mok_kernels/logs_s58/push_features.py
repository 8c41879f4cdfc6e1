"""Session 58: Spearman correlation of the analytic error with workload and knob features, push
dispatch and pull dispatch records apart (the seven registered drawn files, shipped parameters).

    PYTHONPATH=. python mok_kernels/logs_s58/push_features.py
"""

import numpy as np
from scipy.stats import spearmanr
from drawn import predicted

X = []
E = []
D = []
for _, _, recs, meas, pred in predicted():
    for r, e in zip(recs, pred / meas - 1):
        m = r["model"]
        c = r["config"]
        P = r["ep"]
        rows = r["tokens"] * m["top_k"]
        X.append(
            dict(
                logn=np.log(r["tokens"]),
                H=m["hidden"],
                I=m["expert_width"],
                k=m["top_k"],
                EP=m["routed_experts"] / P,
                ep=P,
                comm=c["comm_sms"],
                mb=c["minibatch"],
                combpush=c["combine"] == "push",
                hot=r["routing"].get("kind") == "hot",
                rows_per_mb=min(rows, c["minibatch"]),
                nmb=np.ceil(rows / c["minibatch"]),
                bytes_per_comm=rows * m["hidden"] / c["comm_sms"],
                rows_per_peer=rows / P,
                shared=m["shared_experts"] > 0,
            )
        )
        E.append(e)
        D.append(c["dispatch"] == "push")
E = np.array(E)
D = np.array(D)
for key in X[0]:
    v = np.array([x[key] for x in X], dtype=float)
    a = spearmanr(v[D], E[D])[0]
    b = spearmanr(v[~D], E[~D])[0]
    print("%-15s push rho %+.2f  pull rho %+.2f" % (key, a, b))
