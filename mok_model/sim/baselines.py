"""Discrete-event simulation of the baseline systems (nccl-torch, deepep, hybridep, comet).

Same structure as mok_model/baselines.py, but every GPU runs its own timeline: separate kernels in
order, a device-to-host count sync (forward), then host-launched operations (a slow host leaves
the GPU idle), and the dispatch/combine exchanges through the same simulated network (per-peer
flows over the routes of sim/network.py), so a slow peer delays everyone it sends to.
"""

from __future__ import annotations

import time

import numpy as np
import simpy

from ..analytic import US, expert_ffn_time
from ..baselines import (BASELINES, COMM_KERNELS, PULL_LINK_SHARE, baseline_terms,
                         chunk_handover_s, copy_gbps, host_collectives, host_ops, nccl_peers_cap,
                         signal_per_peer_s, uses_library_gemm)
from ..params import Params
from ..scenario import ELEMENT_BYTES, Scenario
from ..workload import traffic
from . import trace as tr
from .fabric import Driver, Fluid, Join, Message, SimInvariantError, check_fluid, chunks
from .network import Fabric, build_network, fabric_summary, merge_time, peer_groups


def _durations(scn: Scenario, p: Params, system: str) -> dict:
    """Per-GPU kernel durations (seconds) from the analytic primitives, as baselines.py uses them."""
    hw, m = scn.hardware, scn.model
    from ..analytic import loads

    ld = loads(scn)
    fwd = scn.pass_ == "fwd"
    H, k = m.hidden, m.top_k
    act = ELEMENT_BYTES[scn.precision] * H if fwd else 2.0 * H
    hbm = hw.hbm_tbps * 1e12 * p["hbm_eff"]
    coll_before, coll_after = host_collectives(scn, system)
    coll = p["nccl_collective_us"] * p["host_launch_scale"] * US
    tm = p["gemm_tile_m"]
    rows = ld.rows.astype(np.float64)
    tiles = np.ceil(ld.expert_rows / tm).sum(axis=1)
    active = (ld.expert_rows > 0).sum(axis=1)
    lib = uses_library_gemm(system)

    def ffn(sms):
        return np.broadcast_to(expert_ffn_time(scn, p, rows, tiles, active, sms, m.expert_width,
                               library=lib),
                               (scn.ep,))

    def shared(sms):
        if not m.shared_experts:
            return 0.0
        return float(expert_ffn_time(scn, p, scn.tokens, np.ceil(scn.tokens / tm), 1, sms,
                                     m.shared_width, shared=True, library=lib))

    return {"act": act, "out": 2.0 * H, "ffn": ffn, "shared": shared,
            "permute": 2.0 * scn.tokens * k * act / hbm,
            "unpermute": scn.tokens * H * 2.0 * (k + 2) / hbm,
            "sync": ((p["host_sync_us"] * p["host_launch_scale"] * US) if fwd else 0.0)
                    + coll_before * coll,
            "launch": hw.launch_us * p["host_launch_scale"] * US,
            "collectives": coll_after * coll}  # host time of the calls after the count read


def simulate_baseline(scn: Scenario, system: str, p: Params, trace, trace_gpus: frozenset,
                      max_peers: int, chunk_bytes: float = 2 ** 20, merge_s: float | None = None):
    """One baseline pass on every GPU; returns a Prediction (engine "sim")."""
    from ..predict import Prediction

    if system not in BASELINES:
        raise ValueError(system)
    t_wall = time.perf_counter()
    hw, P = scn.hardware, scn.ep
    env = simpy.Environment()
    net = build_network(scn, p)
    groups = peer_groups(net.leaf, max_peers)
    grouped = bool(groups.max() < P - 1)
    G = int(groups.max()) + 1
    du = _durations(scn, p, system)
    t = traffic(scn)
    routed = t.rows.sum(axis=2)
    mat = (t.dedup_rows if system in ("deepep", "hybridep") else routed).copy()
    np.fill_diagonal(mat, 0)  # local rows stay on the GPU (inside permute)
    sms = {"deepep": p["deepep_sms"], "hybridep": p["hybridep_sms"], "comet": p["comet_sms"]}.get(system)
    scale = 1.0 / p["nccl_eff"] if system == "nccl-torch" else 1.0
    # NCCL's channels per peer bound what a GPU sends and receives (baselines.nccl_peers_cap):
    # a sending and a receiving resource a GPU, in the bytes / nccl_eff its flows carry
    nccl = nccl_peers_cap(scn, p) / p["nccl_eff"] if system == "nccl-torch" else np.inf
    ops = host_ops(scn, p, system)
    msg_trace: list | None = [] if trace else None
    spans: list = []
    fab = Fabric(net, groups if grouped else None, copy_gbps(p, system, sms) if sms else 0.0,
                 nccl if np.isfinite(nccl) else 0.0)
    # as in the analytic _exchange: a pulled combine reaches PULL_LINK_SHARE of each link (its
    # bytes weigh more on the links, not on the SMs), and an SM-driven exchange ends with one
    # completion signal per peer, in series
    pull = PULL_LINK_SHARE if sms and COMM_KERNELS[system].combine_pulls else 1.0
    signal = (P - 1) * signal_per_peer_s(scn, p) if sms else 0.0
    # a chunked kernel (DeepEP) hands its rows over chunk by chunk on each channel: no GPU's
    # exchange ends before its chunk handovers (busier side's rows plus the rows it keeps)
    handover = {}
    if sms and COMM_KERNELS[system].chunked:
        rows = np.maximum(mat.sum(0), mat.sum(1)) + np.diagonal(t.dedup_rows)
        handover = {op: chunk_handover_s(scn, rows.astype(np.float64), sms, op)
                    for op in ("dispatch", "combine")}
    fluid = Fluid(env, fab.cap, merge_time(scn) if merge_s is None else merge_s)
    drivers = [Driver(fluid, fab.sm[e], f"copy_sms{e}", e if e < P else -1) if sms else None
               for e in range(len(fab.members))]
    nodes = fab.members
    onehot = np.zeros((P, G), dtype=np.int64)
    onehot[np.arange(P), groups] = 1

    def outgoing(m: np.ndarray) -> list:
        """Per sender: [(endpoint, rows)] with rows > 0; endpoints are GPUs or peer groups."""
        res = []
        for s in range(P):  # staggered: sender s starts with the peer after it (no incast)
            if grouped:
                row = m[s] @ onehot
                order = (groups[s] + 1 + np.arange(G)) % G
                res.append([(P + int(k), int(row[k])) for k in order if row[k]])
            else:
                order = (s + 1 + np.arange(P)) % P
                res.append([(int(d), int(m[s, d])) for d in order if m[s, d]])
        return res

    def my_ep(g: int) -> int:
        return P + int(groups[g]) if grouped else g

    exchanges = {}
    for name, m, nbytes in (("dispatch", mat, du["act"]), ("combine", mat.T.copy(), du["out"])):
        out = outgoing(m)
        n_in = np.zeros(len(nodes), dtype=np.int64)
        for lst in out:
            for e, r in lst:
                n_in[e] += r
        exchanges[name] = (out, [Join(env, int(n)) for n in n_in], nbytes)

    def exchange(g: int, name: str):
        out, inbox, nbytes = exchanges[name]
        t0 = env.now
        sent = Join(env, sum(r for _, r in out[g]))
        drv = drivers[g]
        op = 0 if name == "dispatch" else 1
        flow = (2 * g + op) * len(nodes)
        for e, r in out[g]:
            links, lat, nic = fab.path(g, e)
            if fab.channels:  # the sender's and the receiver's NCCL channels
                links = ((*links[0], fab.channels[0][g], fab.channels[1][e]), (*links[1], 1.0, 1.0))
            trc = ()
            if msg_trace is not None:
                o, i = (tr.LINK_TIDS[("out", "nic")], tr.LINK_TIDS[("in", "nic")]) if nic else \
                    (tr.LINK_TIDS[("out", "nvlink")], tr.LINK_TIDS[("in", "nvlink")])
                trc = tuple((msg_trace, x, t) for x, t in ((g, tr.COMM_SMS), (g, o), (e, i))
                            if x in trace_gpus and (t != tr.COMM_SMS or drv))
            for rc in chunks(r, nbytes, chunk_bytes):
                Message(rc * nbytes, rc, links, lat, (sent, inbox[e]), flow + e, op,
                        name, t0, scale / (pull if op else 1.0), sm_scale=pull if op else 1.0,
                        trace=trc).send(drv, fluid)
        yield simpy.AllOf(env, [sent.done, inbox[my_ep(g)].done])
        if handover and env.now < t0 + handover[name][g]:
            yield env.timeout(t0 + handover[name][g] - env.now)
        if signal:
            yield env.timeout(signal)
        spans.append((g, tr.DISPATCH if name == "dispatch" else tr.COMBINE, name, t0, env.now - t0))

    def compute(g: int, name: str, dur: float):
        t0 = env.now
        yield env.timeout(float(dur))
        spans.append((g, tr.COMPUTE_SMS, name, t0, dur))

    def both(g: int, a, b):
        yield simpy.AllOf(env, [env.process(a), env.process(b)])

    ffn_all = du["ffn"](hw.sms)
    ends = np.zeros(P)
    phase_t: list[dict] = [dict() for _ in range(P)]

    def gpu(g: int):
        def timed(label, gen):
            t0 = env.now
            yield from gen
            phase_t[g][label] = phase_t[g].get(label, 0.0) + env.now - t0

        if system in ("deepep", "hybridep"):
            yield from timed("dispatch_and_shared",
                             both(g, exchange(g, "dispatch"),
                                  compute(g, "shared expert", du["shared"](hw.sms - sms))))
        if du["sync"]:
            yield from timed("host_sync", compute(g, "host sync (count read)", du["sync"]))
        if system == "nccl-torch":
            seq = [("permute", compute(g, "permute", du["permute"])),
                   ("dispatch", exchange(g, "dispatch")),
                   ("routed_gemm", compute(g, "routed gemm", ffn_all[g])),
                   ("shared_expert", compute(g, "shared expert", du["shared"](hw.sms))),
                   ("combine", exchange(g, "combine")),
                   ("unpermute", compute(g, "unpermute", du["unpermute"]))]
        elif system in ("deepep", "hybridep"):
            seq = [("permute", compute(g, "permute", du["permute"])),
                   ("routed_gemm", compute(g, "routed gemm", ffn_all[g])),
                   ("combine", exchange(g, "combine")),
                   ("unpermute", compute(g, "unpermute", du["unpermute"]))]
        else:  # comet: gate/up overlaps the dispatch, down overlaps the combine
            gg = float(du["ffn"](hw.sms - sms)[g]) * (1 + p["comet_overhead"])
            seq = [("permute", compute(g, "permute", du["permute"])),
                   ("dispatch_gemm_overlap", both(g, exchange(g, "dispatch"), compute(g, "gate/up", gg / 2))),
                   ("gemm_combine_overlap", both(g, compute(g, "down", gg / 2), exchange(g, "combine"))),
                   ("shared_expert", compute(g, "shared expert", du["shared"](hw.sms))),
                   ("unpermute", compute(g, "unpermute", du["unpermute"]))]
        host0, host = env.now, ops * du["launch"] + du["collectives"]

        def wait_host(until):
            if env.now < until:
                t0 = env.now
                yield env.timeout(until - env.now)
                phase_t[g]["host_launch_exposed"] = phase_t[g].get("host_launch_exposed", 0.0) + env.now - t0
                spans.append((g, tr.HOST, "waiting for host launches", t0, env.now - t0))

        for j, (label, gen) in enumerate(seq):
            # the host launches ops (and its collective calls) one by one, a share of them for
            # each step; a step starts with its first op launched
            yield from wait_host(host0 + host * j / len(seq))
            yield from timed(label, gen)
        # and the pass ends no earlier than the host's last launch (as baseline_terms reads it)
        yield from wait_host(host0 + host)
        ends[g] = env.now

    for g in range(P):
        env.process(gpu(g))
    env.run()
    # invariants: every routed row crossed once each way, bytes conserved per link
    violations = []
    for name, (_, inbox, _) in exchanges.items():
        want = mat if name == "dispatch" else mat.T
        if sum(j.rows for j in inbox) != int(want.sum()) or any(j.n for j in inbox):
            violations.append(f"{name}: rows received differ from rows sent")
    violations += check_fluid(fluid, fab.names, [d for d in drivers if d])
    if violations:
        raise SimInvariantError("; ".join(violations[:5]))

    ref = baseline_terms(scn, p, system)["terms"]
    slow = int(np.argmax(ends))
    typ = int(np.argsort(ends, kind="stable")[P // 2])
    terms = {"launch": float(ref["launch"]), "schedule": float(ref["schedule"])}
    for label, v in phase_t[typ].items():
        terms[label] = float(v)
    terms["load_imbalance"] = float(ends[slow] - ends[typ])
    terms["quantize"] = float(ref["quantize"])  # serial before the dispatch, as in the analytic model
    offset = terms["launch"] + terms["schedule"]
    latency = sum(terms.values()) * 1e3
    drv = drivers[slow]
    busy = {k: float(fluid.bytes_in[fab.port[k, slow]] / fab.cap[fab.port[k, slow]])
            for k in ("nvlink-up", "nvlink-down")}
    work = {"dispatch": phase_t[slow].get("dispatch", phase_t[slow].get("dispatch_and_shared", 0.0)),
            "combine": phase_t[slow].get("combine", 0.0), "routed_gemm": float(ffn_all[slow]),
            "shared_expert": du["shared"](hw.sms),
            "link_egress": busy["nvlink-up"], "link_ingress": busy["nvlink-down"]}
    if drv:
        work["copy_sms"] = drv.busy_s
    all_spans = [(g, tid, n, s + offset, d) for g, tid, n, s, d in spans + (msg_trace or [])]
    extra = {"events": (int(next(env._eid)) if hasattr(env, "_eid") else 0) + 2 * fluid.flows,
             "invariants": "ok",
             "sim_seconds": round(time.perf_counter() - t_wall, 3),
             "peer_groups": G if grouped else None, "fabric": fabric_summary(net, fluid),
             "timelines": {g: [(tr.THREAD_NAMES[tid], n, s * 1e3, d * 1e3)
                               for gg, tid, n, s, d in all_spans if gg == g and tid != tr.COMM_SMS
                               and tid not in tr.LINK_TIDS.values()] for g in range(P)}}
    if trace:
        extra["trace_events"] = tr.write_trace(trace, all_spans, trace_gpus, P,
                                                {"system": system, **scn.describe()})
        extra["trace"] = str(trace)
    return Prediction(scn, None, system, "sim", latency, {k: v * 1e3 for k, v in terms.items()},
                      {k: v * 1e3 for k, v in work.items()}, p.path, slow, extra=extra)
