"""Session 78: how much of the model's within-workload error do the knobs' features explain?
Each held-out drawn run's log error minus its workload's mean (workloads of 3+ settings), by the
number of minibatches M and comm SMs; then least-squares fits of it, scored on the half they were
not fitted on: (a) knob features alone (log M, log comm SMs and their squares, push dispatch /
combine, the predicted comm and GEMM shares, a comm-bound flag, each times log tokens, three
interactions), halves of the runs; (b) the knobs crossed with the workload's shape (hidden and
expert width, rank 0's rows, its active experts, rows per expert, tokens, top-k, shared expert,
routing kind), halves of the workloads; (c) the correlation with rank 0's gate/up GEMM waves per
minibatch (128 x 128 tiles over the compute SMs) and their wasted share (the 2-core CPU box).

    PYTHONPATH=.:mok_kernels/logs_s60 python mok_kernels/logs_s78/within_features.py HARDWARE FILE ...
"""
import collections
import sys

import numpy as np
from registered_drawn import predicted_mok

from calibration.validate import group_key
from mok_model.analytic import loads, mok_terms
from mok_model.params import load_params
from mok_model.records import record_config, record_scenario

p = load_params(None, sys.argv[1])
rows = []
for f in sys.argv[2:]:
    recs, pred = predicted_mok(p, f)
    groups = collections.defaultdict(list)
    for r, q in zip(recs, pred):
        groups[group_key(r)].append((r, q))
    for n, runs in enumerate(groups.values()):
        if len(runs) < 3:
            continue
        e = np.array([np.log(q / r["latency_ms"]["median"]) for r, q in runs])
        scn = record_scenario(runs[0][0])
        m, er = scn.model, loads(scn).expert_rows[0]
        rank_rows, active = max(float(er.sum()), 1.0), max(float((er > 0).sum()), 1.0)
        shape = [np.log(m.hidden), np.log(m.expert_width), np.log(rank_rows), np.log(active),
                 np.log(max(rank_rows / active, 1.0)), np.log(scn.tokens), np.log(m.top_k),
                 float(m.shared_experts > 0), float(scn.routing.startswith("zipf")),
                 float(scn.routing.startswith("hot"))]
        tiles = np.ceil(er / 128).sum()
        for (r, q), x in zip(runs, e - e.mean()):
            c = record_config(r)
            t = mok_terms(scn, p, np.array([c.dispatch == "push"]), np.array([c.combine == "push"]),
                          np.array([c.minibatch]), np.array([c.comm_sms]), np.array([c.macrobatch]),
                          np.array([c.capacity]))
            w, M = t["work"], float(t["minibatches"][0])
            waves = tiles / M * np.ceil(2 * m.expert_width / 128) / (scn.hardware.sms - c.comm_sms)
            rows.append(dict(e=x, M=M, cc=c.comm_sms, tok=r["tokens"], push_d=c.dispatch == "push",
                             push_k=c.combine == "push", shape=shape, workload=(f, n),
                             comm_bound=str(t["limiter"][0]) == "comm SMs",
                             comm=float(w["dispatch"][0] + w["combine"][0]) * 1e3 / q,
                             gemm=float(w["routed_gemm"][0]) * 1e3 / q, waves=waves,
                             waste=np.ceil(waves) / waves - 1.0))
e = np.array([r["e"] for r in rows])
print(f"{sys.argv[1]}: {len(rows)} runs, within-workload log error sd {100 * e.std():.2f}%")
for name, key in (("M", lambda r: min(int(r["M"]), 16)), ("comm SMs", lambda r: r["cc"])):
    by = collections.defaultdict(list)
    for r in rows:
        by[key(r)].append(r["e"])
    print(f"by {name}: " + ", ".join(f"{k} {100 * np.mean(v):+.1f}% (n {len(v)})" for k, v in sorted(by.items())))


def knobs(r):
    lm, lc, lt = np.log(r["M"]), np.log(r["cc"]), np.log(r["tok"])
    base = [lm, lm ** 2, lc, lc ** 2, r["push_d"], r["push_k"], r["comm"], r["gemm"], r["comm_bound"]]
    return [1.0, *base, *(b * lt for b in base), lm * lc, r["comm"] * lc, r["comm"] * lm]


def crossed(r):
    k = [np.log(r["M"]), np.log(r["cc"]), float(r["push_d"]), float(r["push_k"])]
    return [1.0, *k, *(a * s for a in k for s in r["shape"]), k[0] * k[1], k[1] ** 2, k[0] ** 2]


def score(name, feats, test):
    X = np.array([feats(r) for r in rows], dtype=float)
    b, *_ = np.linalg.lstsq(X[~test], e[~test], rcond=None)
    left = e[test] - X[test] @ b
    print(f"{name} ({X.shape[1]} columns): held-out half sd {100 * e[test].std():.2f}% -> "
          f"{100 * left.std():.2f}%, R^2 {1 - left.var() / e[test].var():.3f}")


rng = np.random.default_rng(0)
score("(a) knobs, halves of the runs", knobs, rng.permutation(len(e)) >= len(e) // 2)
names = sorted({r["workload"] for r in rows})
held = {names[i] for i in rng.permutation(len(names))[: len(names) // 2]}
score("(b) knobs x shape, halves of the workloads", crossed, np.array([r["workload"] in held for r in rows]))
for key in ("waves", "waste"):
    print(f"(c) correlation with gate/up {key}: {np.corrcoef([r[key] for r in rows], e)[0, 1]:+.3f}")
