"""Session 55 analysis: where the analytic model's push dispatch (emulated peers, runs loop)
costs more than measured. Reads records and parameters only; changes nothing in the package.
The candidate formulas are evaluated here by wrapping two analytic functions for the length of
one call (never shipped). Run: PYTHONPATH=. .venv/bin/python
mok_kernels/logs_s55/push_dispatch_analysis.py [held|parts|q2|train|fit|cand]
"""

from __future__ import annotations

import ast
import collections
import json
import sys

import numpy as np

from calibration.registered import match, read_predictions
from mok_model import analytic as A
from mok_model.params import load_params
from mok_model.workload import traffic
from mok_model.records import (predictable, read_records, record_config, record_copy_loop,
                               record_scenario)

US = 1e-6
HELD = [  # registered before the runs: for judging only, never for fitting
    ("h200-1", "calibration/predictions/h200_drawn22_2026-12-05.jsonl", "calibration/runs/h200_drawn/drawn22.jsonl"),
    ("h200-1", "calibration/predictions/h200_drawn21_2026-12-05.jsonl", "calibration/runs/h200_drawn/drawn21.jsonl"),
    ("h100-1", "calibration/predictions/h100_drawn22_2026-12-05.jsonl", "calibration/runs/h100/drawn22.jsonl"),
]
_MULT = {"q": None, "noscan": False}
_q0, _scan0 = A.dispatch_copy_scale, A.push_scan


def _q(scn, p, comm_sms):
    q = _q0(scn, p, comm_sms)
    return q if _MULT["q"] is None else q * _MULT["q"]


def _scan(scn, p, rows, tiles, M, comm_sms):
    return 0.0 if _MULT["noscan"] else _scan0(scn, p, rows, tiles, M, comm_sms)


A.dispatch_copy_scale, A.push_scan = _q, _scan


def chunk_ratio(scn, p) -> float:
    """Chunks the emulated lanes' runs loop copies for rank 0 over its rows / COPY_ROWS: each
    local expert's rows sorted by source (rank order), cut into row tiles of tile_rows, each
    (tile, source) run copied in ceil(len / COPY_ROWS) chunks (a partial chunk's column steps
    wait as long as a full one's: copy_rows is load-latency bound)."""
    t = traffic(scn).rows[:, 0, :].T.astype(np.int64)   # (local expert, source) rows into rank 0
    tm, chunks = int(A.tile_rows(scn, p)), 0
    for row in t:
        edges = np.unique(np.concatenate([np.cumsum(row), np.arange(0, row.sum() + 1, tm), [0]]))
        chunks += int(np.ceil(np.diff(edges) / A.COPY_ROWS).sum())
    return chunks / max(t.sum() / A.COPY_ROWS, 1.0)


def cand_mult(scn, p, cfgs, mode: str, t_idx_us: float = 0.0) -> np.ndarray:
    """(C, 1) factor on a push dispatch's copy rate that turns copy_load's flat 1/serial into
    the candidate's: "pipe" 1/pipe_copy_scale, "idx" 1/pipe_copy_scale plus t_idx_us per
    COPY_ROWS-row chunk (the chunk's dependent src + peer_row loads), i.e. amortized over the
    chunk's bytes (so over copy_steps); 1 for pull dispatch or a loop that is not "runs"."""
    old = A.copy_load(scn, p, pull=False)
    g = p["copy_gbps_per_sm"] * 1e9
    chunk = A.COPY_ROWS * A.dispatch_row_bytes(scn, p)
    new = {"pipe": 1.0 / p["pipe_copy_scale"],
           "idx": 1.0 / p["pipe_copy_scale"] + t_idx_us * US * g / chunk}.get(mode, old)
    if mode == "runs":   # per chunk copied: t_idx plus its column steps at the pipe rate
        new = chunk_ratio(scn, p) * (1.0 / p["pipe_copy_scale"] + t_idx_us * US * g / chunk)
    ok = A.lanes_copy_runs(scn) and A.copy_steps(scn.model.hidden) > 1
    return np.array([[old / new if (ok and c.dispatch == "push") else 1.0] for c in cfgs])


def terms(scn, p, cfgs, q=None, noscan=False):
    """mok_terms for configs of one workload (ms: total, dispatch work, GEMM work)."""
    _MULT["q"], _MULT["noscan"] = q, noscan
    try:
        r = A.mok_terms(scn, p, np.array([c.dispatch == "push" for c in cfgs]),
                        np.array([c.combine == "push" for c in cfgs]),
                        np.array([c.minibatch for c in cfgs]), np.array([c.comm_sms for c in cfgs]),
                        np.array([c.macrobatch for c in cfgs]), np.array([c.capacity for c in cfgs]))
    finally:
        _MULT["q"], _MULT["noscan"] = None, False
    tot = sum(np.asarray(v, float) for v in r["terms"].values()) * 1e3
    w = r["work"]
    return tot, np.ravel(w["dispatch"]) * 1e3, np.ravel(w["routed_gemm"] + w["shared_expert"]) * 1e3


def held_pairs():
    out = []
    for hw, pred, runs in HELD:
        prs = [x for x in read_predictions(pred) if x.get("engine") == "analytic"]
        for x, r in match(prs, read_records([runs])):
            if r["system"] == "mok" and r["config"]["dispatch"] == "push":
                out.append((hw, x["predicted_ms"], r))
    return out


def score(recs, p, mode=None, t_idx_us=0.0):
    """(pred total, dispatch work, gemm work) per record, batched per workload."""
    res = {}
    groups = collections.defaultdict(list)
    for i, r in enumerate(recs):
        groups[json.dumps([r["model"], r["ep"], r["tokens"], r.get("routing"), r.get("pass"),
                           r.get("precision"), r.get("note", "")[:0]], sort_keys=True)
               + str(record_scenario(r))].append(i)
    for ix in groups.values():
        scn = record_scenario(recs[ix[0]])
        cfgs = [record_config(recs[i]) for i in ix]
        q = cand_mult(scn, p, cfgs, mode, t_idx_us) if mode else None
        tot, d, g = terms(scn, p, cfgs, q=q)
        for j, i in enumerate(ix):
            res[i] = (tot[j], d[j], g[j])
    return [res[i] for i in range(len(recs))]


def parts(rec, p):
    """Question 1: the dispatch's copy at its rate and its visit cost (push_scan), rank 0."""
    scn, cfg = record_scenario(rec), record_config(rec)
    ld = A.loads(scn)
    rows = float(ld.rows[0])
    act = A.dispatch_row_bytes(scn, p)
    cc = cfg.comm_sms
    M, tiles = A.minibatch_tiles(scn, p, type(ld)(**{k: v[:1] for k, v in vars(ld).items()}),
                                 np.array([[cfg.minibatch]]))
    M, tiles = float(np.ravel(M)[0]), float(np.ravel(tiles)[0])
    base = rows * act / (cc * p["copy_gbps_per_sm"] * 1e9) * 1e3
    push = cfg.dispatch == "push"
    load = A.copy_load(scn, p, pull=not push)
    scan = float(np.ravel(A.push_scan(scn, p, rows, tiles, M, cc))[0]) * 1e3 if push else 0.0
    tot, d, g = terms(scn, p, [cfg])
    tot0, d0, _ = terms(scn, p, [cfg], noscan=True)
    qp = cand_mult(scn, p, [cfg], "pipe")
    totp, dp, _ = terms(scn, p, [cfg], q=qp)
    return dict(rows=rows, M=M, tiles=tiles, visits=float(np.ravel(A.push_visits(
        scn, scn.ep, cc, rows / M, np.ceil(tiles / M)))[0]), base=base, load=load,
        copy=base * load / (p["push_copy_scale"] if push else 1.0), scan=scan, dispatch=d[0],
        gemm=g[0], total=tot[0], total_noscan=tot0[0], total_pipe=totp[0], steps=A.copy_steps(scn.model.hidden))


def training(p):
    src = p.source("minibatch_overhead_us") if hasattr(p, "source") else None
    if src is None:
        src = json.load(open("mok_model/params/h200-1.json"))["values"]["minibatch_overhead_us"]["source"]
    files = ast.literal_eval(src[src.index("["):src.index("]") + 1])
    recs = [r for r in read_records(files) if r["system"] == "mok" and predictable(r)
            and r["config"].get("dispatch") == "push" and not isinstance(record_config(r), dict)]
    return recs


CASES = [  # (model name prefix, EP, tokens, minibatch, comm SMs): the brief's cases
    ("syn22-h7936", 32, 6144, 4096, 8), ("syn22-h7936", 4, 640, 1024, 16),
    ("syn21-h7680", 32, 4608, 1024, 8), ("syn21-h7680", 8, 4608, 512, 8)]
CANDS = [("shipped", None, 0.0), ("pipe", "pipe", 0.0), ("idx0.26", "idx", 0.26),
         ("idx1.0", "idx", 1.0), ("runs0", "runs", 0.0), ("runs0.5", "runs", 0.5)]


def _case(r):
    c = r["config"]
    return (r["model"]["name"][:11], r["ep"], r["tokens"], c["minibatch"], c["comm_sms"])


def _stats(err):
    e = np.asarray(err)
    return f"n {len(e)} median {100 * np.median(e):+.1f}% MAPE {100 * np.mean(np.abs(e)):.1f}%"


def main(what: str) -> None:
    p = load_params(None, "h200-1")
    if what == "held":
        for hw, reg, r in held_pairs():
            (t, d, g), = score([r], load_params(None, hw))
            c, m = r["config"], r["latency_ms"]["median"]
            print(hw, r["model"]["name"][:11], r["ep"], r["tokens"], r["routing"].get("kind"),
                  c["combine"], c["minibatch"], c["comm_sms"],
                  f"meas {m:.3f} reg {reg:.3f} now {t:.3f} ({100 * (t / m - 1):+.0f}%) D {d:.3f} G {g:.3f}")
    elif what == "parts":
        for path in ("calibration/runs/h200_drawn/drawn22.jsonl", "calibration/runs/h200_drawn/drawn21.jsonl"):
            for r in read_records([path]):
                if r["system"] == "mok" and r["hardware"]["preset"] == "h200-1" and _case(r) in CASES:
                    x = parts(r, p)
                    print(_case(r), r["routing"].get("kind"), r["config"]["dispatch"], r["config"]["combine"],
                          f"meas {r['latency_ms']['median']:.3f}", " ".join(f"{k} {v:.4g}" for k, v in x.items()))
    elif what == "train":
        recs = training(p)
        sc = score(recs, p)
        g = collections.defaultdict(list)
        for r, (t, d, gm) in zip(recs, sc):
            H = record_scenario(r).model.hidden
            k = (record_copy_loop(r), "D>G" if d > gm else "D<=G", r["config"]["comm_sms"],
                 "H>=6144" if H >= 6144 else "H<6144")
            g[k].append(t / r["latency_ms"]["median"] - 1)
        for k, v in sorted(g.items()):
            print(*k, _stats(v))
        few = [t / r["latency_ms"]["median"] - 1 for r, (t, _, _) in zip(recs, sc)
               if r["config"]["comm_sms"] == 8 and r["ep"] == 32 and (r.get("routing") or {}).get("kind") == "hot"
               and record_scenario(r).model.hidden >= 6144]
        print("push, 8 comm SMs, hot, EP 32, H>=6144:", _stats(few))
    elif what == "cand":   # held-out runs grouped by the SHIPPED model's binding (D > G)
        held = [(hw, r) for hw, _, r in held_pairs()]
        train = [r for r in training(p) if record_copy_loop(r) == "runs"]
        ship = {id(r): score([r], load_params(None, hw))[0] for hw, r in held}
        for name, mode, t in CANDS:
            errs = collections.defaultdict(list)
            for hw, r in held:
                (tt, _, _), = score([r], load_params(None, hw), mode, t)
                e = tt / r["latency_ms"]["median"] - 1
                _, d, gm = ship[id(r)]
                wide = "H>=6144" if record_scenario(r).model.hidden >= 6144 else "H<6144"
                errs[(hw, "D>G" if d > gm else "D<=G", wide)].append(e)
                if _case(r) in CASES and hw == "h200-1":
                    print(name, _case(r), r["config"]["combine"], f"{tt:.3f} ({100 * e:+.0f}%)")
            for k, v in sorted(errs.items()):
                print(name, "held", *k, _stats(v))
            sc = score(train, p, mode, t)
            print(name, "train runs", _stats([x[0] / r["latency_ms"]["median"] - 1
                                               for x, r in zip(sc, train)]))
    elif what == "q2":    # per-chunk charge of the flat ratio vs a fixed wait
        g = p["copy_gbps_per_sm"] * 1e9
        for H in (2048, 4096, 7168, 7936):
            chunk = A.COPY_ROWS * 2.0 * H
            pipe = chunk / g / p["pipe_copy_scale"] / US
            ser = chunk / g / p["serial_copy_scale"] / US
            print(f"H {H} steps {A.copy_steps(H)} chunk {chunk / 1e3:.1f} kB pipe {pipe:.2f} us "
                  f"serial {ser:.2f} us extra {ser - pipe:.2f} us; t_idx 1 us -> copy_load "
                  f"{1 / p['pipe_copy_scale'] + US * g / chunk:.3f} (shipped {1 / p['serial_copy_scale']:.3f})")
    elif what == "fit":   # t_idx on the training files' runs-loop push records only
        train = [r for r in training(p) if record_copy_loop(r) == "runs"]
        for t in (0.0, 0.13, 0.26, 0.5, 1.0, 2.0):
            sc = score(train, p, "idx", t)
            print(f"t_idx {t} us", _stats([x[0] / r["latency_ms"]["median"] - 1 for x, r in zip(sc, train)]))
    else:
        raise SystemExit(f"unknown: {what}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "held")
