"""Discrete-event simulation of one MoK megakernel pass on every GPU of the EP group.

Per GPU: C_comm comm SMs (a resource of C_comm x copy_gbps_per_sm that starts the next
minibatch's copies of an operation once fewer than INFLIGHT_PER_SM x C_comm x COPY_ROWS rows of
it are in flight, as the kernel's comm programs copy a minibatch's rows before the next one's,
and a minibatch's copies from or to every peer at once, as its programs take the minibatch's
chunks in the schedule's order, expert then source; a pushing copy loads it 1 / push_copy_scale more,
and the chunks a push dispatch or our pull combine scans for its rows push_scan_us each more, or
the row tiles of push lanes that copy runs),
the compute SMs (GEMMs timed by analytic.gemm_time / expert_ffn_parts for each real minibatch),
its links in the network (sim/network.py: NVLink planes, switch tiers, scale-out NICs and rails;
every copy a flow sharing them max-min fairly), and a macrobatch ring buffer of `macrobatch`
rows. Minibatches flow dispatch -> gate/up (+SwiGLU epilogue) -> down ->
combine. Work is aggregated per minibatch per peer (or peer group at large EP), cut into chunks
of at most chunk_bytes, never per token.

Orders: received rows are sorted by local expert, then source (the schedule's order), and cut
into minibatches (by rows, or on row-tile boundaries: tile_aligned_minibatches); a GPU's comm
SMs walk its minibatches in order (one stream per operation, each with its own window; a
minibatch's copies to or from every peer start together, but our kernel's pull combine, whose
homes walk the owners in rank order); flows share every link and SM group max-min fairly.
The compute SMs walk one work list (shared gate/up, gate/up 0, shared down, gate/up i+1 before
down i), taking the first GEMM that can run.

The implementation choices of the parameters file act as in analytic.mok_terms: a push combine
stored from the down-GEMM epilogue (combine_in_epilogue), comm SMs that join the compute once
their GPU's dispatch is done (comm_join_share: the GEMMs' remaining SM-seconds are shared by
more SMs), tiles that stream across minibatches (wave_sync 0: the HBM floor binds on running
totals), a ring that frees a minibatch's slots row tile by row tile over the last
ring_refill_overlap share of its gate/up, and, on emulated hardware, the pass of rank 0 (the
rank the one GPU runs) rather than of the slowest GPU.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import simpy

from ..analytic import (COPY_ROWS, US, copy_beside_gemm, copy_load, dispatch_copy_scale,
                        dispatch_row_bytes, expert_ffn_parts, ffn_pieces, in_order_wait,
                        iteration_rows, list_period, loads, minibatch_signals, minibatch_sources,
                        push_lane_rows, push_visit_s, push_visits, ring_capacity, scan_chunk_s,
                        shared_section, source_orders, tile_rows)
from ..params import Params
from ..scenario import Config, Scenario
from ..workload import traffic
from . import trace as tr
from .fabric import EPS_T, Driver, Fluid, Join, Message, SimInvariantError, check_fluid, chunks
from .network import Fabric, Network, build_network, peer_groups

SCHEDULES = ("published", "naive")
INFLIGHT_PER_SM = 2  # copies of COPY_ROWS rows each comm SM keeps in flight (double buffering)
NO_PATH = ((), ())  # local rows: the comm SMs copy them, no link


@dataclass
class Plan:
    """Per-GPU work of a pass, precomputed from the routing (lists indexed by GPU)."""

    minibatches: np.ndarray  # (P,) M per GPU
    endpoints: list  # per GPU: endpoint ids; [0] is the GPU itself (its local rows)
    rows: list  # per GPU: (M, Q) routed rows per minibatch per endpoint
    gate_up: list  # per GPU: (M,) seconds of gate/up GEMM (+ SwiGLU epilogue)
    down: list  # per GPU: (M,) seconds of the down GEMM
    gate_up_joined: list  # the same once a share of the comm SMs joined the compute
    down_joined: list
    row_tiles: list  # per GPU: (M,) row tiles of the real minibatch (tile quantization)
    shared: float  # seconds of the shared expert
    shared_split: tuple  # (gate/up, down, gate/up joined, down joined) seconds of the shared expert
    join_scale: float  # compute SMs / compute SMs once the comm SMs joined
    groups: np.ndarray  # (P,) peer group of each GPU
    grouped: bool


def _stream_floor(t: np.ndarray, floor: np.ndarray, wave_sync: float, splits) -> np.ndarray:
    """FFN seconds per minibatch from its tile time and its HBM floor (weights of the experts it
    touches). With whole waves (wave_sync 1) each minibatch is floored by its own reads; when
    tiles stream from one work counter (wave_sync 0) the next minibatches' weights load while
    earlier tiles run, so the floor binds on the running totals of each GPU's minibatches:
    end_i = max(end_{i-1} + t_i, floor_1 + ... + floor_i)."""
    whole = np.maximum(t, floor)
    if wave_sync >= 1.0:
        return whole
    out = []
    for tt, ff in zip(np.split(t, splits), np.split(floor, splits)):
        ends = np.empty_like(tt)
        end, cum = 0.0, np.cumsum(ff)
        for i in range(len(tt)):
            end = max(end + tt[i], cum[i])
            ends[i] = end
        out.append(np.diff(ends, prepend=0.0))
    return wave_sync * whole + (1.0 - wave_sync) * np.concatenate(out)


def _gemm_split(scn: Scenario, p: Params, rows, tiles, touched, sms, shared: bool = False, splits=(),
                wgrad_experts=None, width: int | None = None):
    """(gate/up, down) seconds per minibatch (or of the shared expert, `width` wide: analytic's
    shared_section): the FFN time (analytic's expert_ffn_parts, the floor streamed per GPU:
    `splits` cut the flat minibatches into GPUs) split in proportion to its parts
    (analytic.ffn_pieces): forward gate/up and down; backward the recomputed gate/up first, then
    the data and weight gradients."""
    ws = _param(p, "wave_sync", 1.0)
    width = scn.model.expert_width if width is None else width
    t_tiles, floor = expert_ffn_parts(scn, p, rows, tiles, touched, sms, width, shared=shared, wave_sync=ws,
                                      wgrad_experts=wgrad_experts)
    ffn = _stream_floor(np.atleast_1d(np.asarray(t_tiles, np.float64)),
                        np.atleast_1d(np.asarray(floor, np.float64)), ws, splits)
    parts = ffn_pieces(scn, p, rows, tiles, touched, sms, width, shared=shared, wave_sync=ws,
                       wgrad_experts=wgrad_experts)
    first = np.atleast_1d(np.asarray(parts["gate_up"], dtype=np.float64))
    total = np.atleast_1d(np.asarray(sum(parts.values()), dtype=np.float64))
    first, total = np.broadcast_arrays(first, total)
    share = np.divide(first, total, out=np.full_like(total, 0.5), where=total > 0)
    return ffn * share, ffn * (1 - share)


def _list_bound(scn: Scenario, p: Params, gu, dn, tiles, sms):
    """Each minibatch's (gate/up, down) seconds stretched, in proportion, to the period the
    kernel's in-order work list allows where it binds (analytic.list_period, as mok_terms' c)."""
    period = list_period(scn, p, tiles, sms)
    total = gu + dn
    scale = np.where(period > total, period / np.maximum(total, 1e-30), 1.0)
    return gu * scale, dn * scale


def make_plan(scn: Scenario, p: Params, cfg: Config, net: Network, max_peers: int) -> Plan:
    """Cut every GPU's received rows (ordered by local expert, then source) into minibatches."""
    P = scn.ep
    src = source_orders(P, _param(p, "source_order_rotated") >= 0.5)  # (P, P) each GPU's order
    tm = int(tile_rows(scn, p))
    cut = minibatch_sources(scn, int(cfg.minibatch), tm,
                            _param(p, "tile_aligned_minibatches") >= 0.5,
                            _param(p, "source_order_rotated") >= 0.5)
    M = np.array([len(lo) for lo, _ in cut], dtype=np.int64)
    groups = peer_groups(net.leaf, max_peers)
    grouped = bool(groups.max() < P - 1)
    G = int(groups.max()) + 1
    onehot = np.zeros((P, G), dtype=np.int64)
    onehot[np.arange(P), groups] = 1
    endpoints, rows_l, rr, tt, aa, ww = [], [], [], [], [], []
    for d in range(P):
        cnt = cut[d][1]  # (M, L, P) by minibatch, local expert, source in d's order
        per_expert = cnt.sum(axis=2)  # (M, L)
        per_src = np.zeros((M[d], P), dtype=cnt.dtype)
        per_src[:, src[d]] = cnt.sum(axis=1)  # (M, P), by source rank
        if not grouped:
            order = np.concatenate([[d], (d + 1 + np.arange(P - 1)) % P])
            ep_rows = per_src[:, order]
            eps = order
        else:
            remote = per_src.copy()
            remote[:, d] = 0
            gsum = remote @ onehot  # (M, G)
            gorder = (groups[d] + 1 + np.arange(G)) % G  # own group (its other members) last
            ep_rows = np.concatenate([per_src[:, [d]], gsum[:, gorder]], axis=1)
            eps = np.concatenate([[d], P + gorder])
        endpoints.append(eps)
        rows_l.append(ep_rows)
        rr.append(per_src.sum(axis=1))
        tt.append(np.ceil(per_expert / tm).sum(axis=1))
        aa.append((per_expert > 0).sum(axis=1))
        # an expert's weight-gradient blocks count once, in the minibatch of its first rows
        ww.append(((per_expert > 0) & (np.cumsum(per_expert, axis=0) == per_expert)).sum(axis=1))
    cx = scn.hardware.sms - cfg.comm_sms
    flat_r, flat_t, flat_a, flat_w = (np.concatenate(v).astype(np.float64) for v in (rr, tt, aa, ww))
    splits = np.cumsum(M)[:-1]
    gu, dn = _list_bound(scn, p, *_gemm_split(scn, p, flat_r, flat_t, flat_a, cx, splits=splits,
                                              wgrad_experts=flat_w), flat_t, cx)
    # comm SMs join the compute only when the combine does not need them (epilogue push)
    epilogue = cfg.combine == "push" and _param(p, "combine_in_epilogue") >= 0.5
    share = _param(p, "comm_join_share") if epilogue else 0.0
    # the joining SMs take tiles from the same work list: the GEMMs run on cx + share x C_comm
    # SMs, but the HBM floor (weights streamed once per GPU) does not shrink with more SMs, so the
    # joined times are the FFN times on the joined SMs (as analytic.mok_terms' c_join)
    joined = cx + share * cfg.comm_sms
    join_scale = cx / joined
    gu_j, dn_j = (_list_bound(scn, p, *_gemm_split(scn, p, flat_r, flat_t, flat_a, joined,
                                                   splits=splits, wgrad_experts=flat_w),
                              flat_t, joined) if share > 0 else (gu, dn))
    shared, shared_split = 0.0, (0.0, 0.0, 0.0, 0.0)
    ns, sw = shared_section(scn)
    if ns:
        sh = (scn.tokens * ns, np.ceil(scn.tokens / tm) * ns, ns)
        sg, sd = _gemm_split(scn, p, *sh, cx, shared=True, width=sw)
        sgj, sdj = _gemm_split(scn, p, *sh, joined, shared=True, width=sw) if share > 0 else (sg, sd)
        shared_split = tuple(float(np.asarray(x).reshape(-1)[0]) for x in (sg, sd, sgj, sdj))
        shared = shared_split[0] + shared_split[1]
    return Plan(M, endpoints, rows_l, np.split(gu, splits), np.split(dn, splits),
                np.split(gu_j, splits), np.split(dn_j, splits), [np.asarray(x) for x in tt],
                shared, shared_split, join_scale, groups, grouped)


def _param(p: Params, name: str, default: float = 0.0) -> float:
    """An optional implementation-choice parameter (older parameter files lack it)."""
    try:
        return float(p[name])
    except KeyError:
        return default


class _Gated:
    """Forwards message arrivals to a Join, held back until a process (a GEMM) has ended."""

    __slots__ = ("join", "proc", "held")

    def __init__(self, join: Join, proc):
        self.join, self.proc, self.held = join, proc, []

    def add(self, t: float, rows: int) -> None:
        if self.proc.processed:
            self.join.add(max(t, self.proc.value), rows)
            return
        if not self.held:
            self.proc.callbacks.append(self._release)
        self.held.append((t, rows))

    def _release(self, ev) -> None:
        for t, rows in self.held:
            self.join.add(max(t, ev.value), rows)


class _WalkEnd:
    """Hears when a home's last scan of its pull-combine walk is done (MokSim.walk_end)."""

    __slots__ = ("sim", "home")

    def __init__(self, sim: "MokSim", home: int):
        self.sim, self.home = sim, home

    def add(self, t: float, rows: int) -> None:
        self.sim.walk_end[self.home] = max(self.sim.walk_end[self.home], t)


class MokSim:
    """One MoK pass on P GPUs; `run()` fills per-GPU times, spans and counters."""

    def __init__(self, scn: Scenario, p: Params, cfg: Config, schedule: str = "published",
                 trace_gpus: frozenset = frozenset(), max_peers: int = 128,
                 chunk_bytes: float = 2 ** 20, merge_s: float = 0.0):
        if schedule not in SCHEDULES:
            raise ValueError(f"schedule {schedule!r} must be one of {SCHEDULES}")
        self.scn, self.p, self.cfg, self.schedule = scn, p, cfg, schedule
        self.chunk = chunk_bytes
        self.env = env = simpy.Environment()
        self.net = net = build_network(scn, p)
        self.plan = plan = make_plan(scn, p, cfg, net, max_peers)
        m, P = scn.model, scn.ep
        self.P = P
        self.act = dispatch_row_bytes(scn, p)  # as analytic.mok_terms
        self.out = 2.0 * m.hidden
        self.dpush = cfg.dispatch == "push"
        self.kpush = cfg.combine == "push"
        # emulated peers are absent: the one GPU's comm SMs act for them, so they move the rows
        # it receives (push dispatch too) and the outputs it holds (pull combine too)
        self.emulated = scn.hardware.emulated_ranks
        self.sender_push = self.dpush and not self.emulated
        # implementation choices (parameters file), as in the analytic model: a push combine
        # stored from the down-GEMM epilogue (fabric only, no comm SMs), and comm SMs that join
        # the compute once every dispatch of their GPU is done
        self.epilogue = self.kpush and _param(p, "combine_in_epilogue") >= 0.5
        self.joins = self.epilogue and _param(p, "comm_join_share") > 0
        # comm SMs may finish every dispatch of their GPU before the first pull-combine copy
        self.combine_after_dispatch = _param(p, "combine_after_dispatch", 0.0) >= 0.5
        # our kernel across GPUs: a home's comm SMs pull the owners' rows owner after owner, in
        # rank order, each owner's minibatches in order (analytic.pull_combine_tail); emulated
        # peers and merged peer groups keep the published interleaving
        self.owner_walk = (not self.kpush and not self.emulated and not plan.grouped and P > 1
                           and _param(p, "combine_owner_order", 0.0) >= 0.5)
        # [home][owner][minibatch]: fires with the home's copies of that minibatch once the home
        # may read them (the owner's flag seen)
        self.walk = [[[env.event() for _ in range(int(M))] for M in plan.minibatches]
                     for _ in range(P)] if self.owner_walk else []
        self.walk_end = np.zeros(P)  # when each home's walk scanned its last chunks
        # a pushing comm SM copies at push_copy_scale of a pulling one's rate (as analytic.move);
        # a loop that loads its indices step by step loads the SMs copy_load more a byte
        push_scale = copy_load(scn, p, pull=False) / _param(p, "push_copy_scale", 1.0)
        pull_scale = copy_load(scn, p, pull=True)
        # comm SMs that quantize rows while they copy them load it 1 / dispatch_copy_scale more
        self.dispatch_sm_scale = ((push_scale if self.dpush else pull_scale)
                                  / float(dispatch_copy_scale(scn, p, cfg.comm_sms)))
        # a push dispatch's lanes also visit every chunk of the receiver's minibatch for their
        # rows (analytic.push_scan): that time loads the copying comm SMs as more bytes
        # (or its row tiles, where the lanes copy runs or shares: analytic.push_visits)
        self.scan_s = scan_chunk_s(scn, p)
        self.visit_s = push_visit_s(scn, p)
        self.push_scan = self.dpush and P > 1 and self.visit_s > 0
        self.combine_sm_scale = push_scale if self.kpush else pull_scale
        # our pull combine's homes also visit every chunk of each owner's minibatch for their
        # rows (analytic.pull_scan_chunks): that time loads each home's comm SMs as more bytes
        self.pull_scan = self.owner_walk and self.scan_s > 0
        # comm SMs copy at (1 - copy_slowdown_beside_gemm) of their rate while their GPU's
        # compute SMs run a GEMM (analytic.copy_beside_gemm); GEMMs running on each GPU
        self.slowdown = _param(p, "copy_slowdown_beside_gemm")
        self.gemms_on = np.zeros(P, dtype=int)
        self.dispatched = np.zeros(P, dtype=int)
        self.all_dispatched = [env.event() for _ in range(P)]
        # signalling as analytic.mok_terms: a push dispatch's receiver starts a minibatch when
        # the last sender's releases (push_release) and one remote signal are done; flags heard
        # from every peer in turn (a pull combine's polls, a push combine's end) take polls_wait
        self.sig_local = p["signal_local_us"] * US
        release, remote_wait, dispatch_wait, _, sig_comm = minibatch_signals(
            P, p, cfg.comm_sms, self.dpush, self.kpush)
        self.release, self.remote_wait = float(release), float(remote_wait)
        self.dispatch_wait = float(dispatch_wait)
        # a GPU's releases (push dispatch) and polls (pull combine) of a minibatch
        # (analytic.with_signals): our kernel's comm programs signal between their copies
        # (push_release_lanes 1: comm-SM seconds added to the minibatch's copies); one writer
        # signals beside them, a serial chain per GPU (sig_free: when it is next free) in which
        # each of its minibatches takes its turn once its rows are in
        self.sig_comm = float(sig_comm)
        self.sig_lanes = _param(p, "push_release_lanes") >= 0.5
        self.sig_free = [0.0] * P
        self.spans: list = []  # (gpu, tid, name, start, dur)
        self.span_args: dict = {}  # (gpu, name) -> trace args (rows, tiles, waves)
        self.msg_trace: list | None = [] if trace_gpus else None
        sm_rate = cfg.comm_sms * p["copy_gbps_per_sm"] * 1e9
        self.sm_rate = sm_rate
        self.lane_ready = self._lane_ready(scn, p, cfg, plan) if self.dpush else None
        E = P + (int(plan.groups.max()) + 1 if plan.grouped else 0)  # endpoints: GPUs, peer groups
        self.fab = fab = Fabric(net, plan.groups if plan.grouped else None, sm_rate)
        self.fluid = fluid = Fluid(env, fab.cap, merge_s)
        self.trace_gpus = trace_gpus
        nic_lat = scn.hardware.scaleout_latency_us * 1e-6 * 0.999  # NIC copies are posted
        self.sm = []
        for e, m in enumerate(fab.members):
            drv = Driver(fluid, fab.sm[e], f"comm_sms{e}", e if e < P else -1,
                         window=INFLIGHT_PER_SM * COPY_ROWS * cfg.comm_sms * len(m), flow_div=E)
            if scn.domains > 1:
                drv.window_latency = nic_lat
            self.sm.append(drv)
        self.rep = fab.rep
        # a remote read (pull) is a round trip: the request out, the rows back (as
        # analytic.mok_terms); emulated peers read local HBM, whose latency is in the copy rate
        self.read_trips = 1.0 if self.emulated else 2.0
        self.E = E
        # the ring must hold one minibatch: tile-aligned minibatches span up to minibatch +
        # tile_m - 1 rows, and the kernel raises a smaller ring to that (KernelConfig.macrobatch)
        # (analytic.ring_capacity). The rows a timed iteration routes to a GPU exceed the seeded
        # routing's by analytic.iteration_rows' margin; those extra rows take ring slots here.
        widest = max(int(r.sum(axis=1).max()) for r in plan.rows)
        ring = float(ring_capacity(p, cfg.macrobatch, cfg.minibatch, scn)[0, 0])
        margin = np.ceil(iteration_rows(scn, loads(scn)) - traffic(scn).received())
        self.ring_rows = [int(max(ring - margin[d], widest)) for d in range(P)]
        self.ring = [simpy.Container(env, capacity=n, init=n) for n in self.ring_rows]
        # a GPU whose rows do not all fit in the ring recycles slots: the comm SMs take slots
        # per copy as the gate/up tiles free them (see _free_ring)
        self.tight = [int(r.sum()) > n for r, n in zip(plan.rows, self.ring_rows)]
        self.refill_overlap = _param(p, "ring_refill_overlap")
        # per-endpoint inbox of combined rows (a home GPU, or a peer group at large EP)
        self.expected_home_rows = np.zeros(len(self.sm), dtype=np.int64)
        for d in range(P):
            np.add.at(self.expected_home_rows, plan.endpoints[d], plan.rows[d].sum(axis=0))
        self.inbox = [Join(env, int(n)) for n in self.expected_home_rows]
        self.ready = [[env.event() for _ in range(M)] for M in plan.minibatches]
        self.computed = [[env.event() for _ in range(M)] for M in plan.minibatches]
        self.dispatch_joins: list[list] = [[None] * M for M in plan.minibatches]
        self.combine_joins: list[list] = [[None] * M for M in plan.minibatches]
        self.combine_opened = [np.zeros(M, dtype=int) for M in plan.minibatches]
        self.first_gemm = np.zeros(P)
        self.compute_end = np.zeros(P)
        self.ring_wait = np.zeros(P)  # comm SMs blocked on a full ring or recycling slots
        self.ring_wrap = np.zeros(P)  # of which slot-recycling (wrap) time
        self.violations: list[str] = []
        self._pending: dict[int, list] = {}

    # --- fabric helpers ---
    def _path(self, src: int, dst: int, driver: int) -> tuple[tuple, float, tuple]:
        """(route, latency, trace targets) for data from endpoint src to endpoint dst, driven by
        the comm SMs of endpoint `driver` (-1: none)."""
        path, lat, nic = self.fab.path(src, dst)
        if self.emulated:
            path = self._driven_port(path, src, dst, driver)
        tr_ = ()
        if self.msg_trace is not None:
            out_t, in_t = (tr.LINK_TIDS[("out", "nic")], tr.LINK_TIDS[("in", "nic")]) if nic else \
                (tr.LINK_TIDS[("out", "nvlink")], tr.LINK_TIDS[("in", "nvlink")])
            tr_ = tuple((self.msg_trace, g, t) for g, t in ((driver, tr.COMM_SMS), (src, out_t), (dst, in_t))
                        if g in self.trace_gpus)
        return path, lat, tr_

    def _driven_port(self, path: tuple, src: int, dst: int, driver: int) -> tuple:
        """On emulated hardware one GPU runs rank 0 alone, its peers' buffers in its own memory:
        a copy loads only the port of the GPU whose comm SMs (or, driver -1, down-GEMM epilogue)
        move it, the receiver's link in for data it reads, the sender's link out for data it
        writes (analytic.mok_terms' move; its source_hotspot is 0 there). No other receiver's
        copy shares a source's link out, as none runs."""
        kind, end = ("nvlink-down", dst) if driver == dst else ("nvlink-up", src)
        port = self.fab.port.get((kind, end))
        keep = [(r, w) for r, w in zip(*path) if r == port]
        return tuple(r for r, _ in keep), tuple(w for _, w in keep)

    def _enqueue(self, driver: int, owner: int, msg: Message) -> None:
        """Queue a message on another GPU's SMs. Requests that reach a driver at the same instant
        are started in its staggered order (peer after itself first), as real kernels do, so
        that all drivers do not write to the same GPU at once (incast)."""
        pend = self._pending.get(driver)
        if pend is None:
            pend = self._pending[driver] = []
            self.env.timeout(0).callbacks.append(lambda _e, drv=driver: self._flush(drv))
        pend.append(((self.rep[owner] - self.rep[driver]) % self.P, msg))

    def _flush(self, driver: int) -> None:
        pend = self._pending.pop(driver)
        pend.sort(key=lambda x: x[0])  # stable: a peer's minibatches stay in order
        for _, msg in pend:
            msg.send(self.sm[driver], self.fluid)

    def link_busy(self, g: int) -> dict[str, float]:
        """Seconds each NVLink/NIC port of GPU g was busy (bytes through it / its rate)."""
        f, fab = self.fluid, self.fab
        return {k: float(f.bytes_in[fab.port[k, g]] / fab.cap[fab.port[k, g]])
                for k in ("nvlink-up", "nvlink-down", "nic-up", "nic-down") if (k, g) in fab.port}

    def _check_fabric(self) -> None:
        """Bytes that entered every link (and SM group) left it; nothing queued or in flight."""
        for v in check_fluid(self.fluid, self.fab.names, self.sm):
            self.violations.append(v)

    def _check(self, ok: bool, what: str) -> None:
        if not ok:
            self.violations.append(what)

    # --- operations ---
    def open_dispatch(self, d: int, i: int):
        """Dispatch minibatch i of GPU d (a generator: on a tight ring, each copy first takes its
        rows' slots in the ring, in order)."""
        rows = self.plan.rows[d][i]
        eps = self.plan.endpoints[d]
        nz = np.nonzero(rows)[0]
        join = Join(self.env, int(rows.sum()), self.dispatch_wait)
        self.dispatch_joins[d][i] = join
        now, name = self.env.now, f"dispatch mb{i}"
        flow = 2 * d * self.E
        sm_scale = self.dispatch_sm_scale
        if self.push_scan and rows.sum() > 0:  # the scan's seconds, as bytes at the SMs' rate
            visits = push_visits(self.scn, self.P, self.cfg.comm_sms, rows.sum(),
                                 self.plan.row_tiles[d][i])
            scan = float(visits) * self.visit_s
            sm_scale += scan * self.sm_rate / (float(rows.sum()) * self.act)
        if self.sig_lanes and self.sig_comm > 0 and rows.sum() > 0:  # as the scan's seconds
            sm_scale += self.sig_comm * self.sm_rate / (float(rows.sum()) * self.act)
        for j in nz:
            e = int(eps[j])
            drv = e if self.sender_push and j else d
            if j == 0:
                links, lat, trc = NO_PATH, 0.0, ()
            else:
                links, lat, trc = self._path(e, d, drv)
                if not self.sender_push:
                    lat *= self.read_trips
            for rc in chunks(int(rows[j]), self.act, self.chunk):
                msg = Message(rc * self.act, rc, links, lat, (join,), flow + e, 0, name, now,
                              sm_scale=sm_scale, trace=trc, batch=i)
                if self.tight[d]:
                    yield from self._take_slots(d, rc)
                if self.sender_push and j:  # the peer's SMs write, in their own staggered order
                    self._enqueue(e, d, msg)
                else:
                    msg.send(self.sm[d], self.fluid)
        ev = self.ready[d][i]
        if self.sig_comm > 0 and not self.sig_lanes:
            # once its rows are in, the minibatch's signalling takes its turn in the GPU's serial
            # chain of releases and polls (sig_comm apiece); a push dispatch's compute starts
            # one remote signal after its releases
            join.in_data().callbacks.append(
                lambda e, d=d, i=i, ev=ev: self._signalled(d, ev, self._lane_at(d, i, e.value)))
        else:
            join.done.callbacks.append(lambda e, d=d, i=i, ev=ev: self._rows_in(d, i, ev, e.value))
        join.done.callbacks.append(lambda e, d=d: self._count_dispatched(d))
        join.done.callbacks.append(lambda e, d=d, i=i, t0=now: self.spans.append(
            (d, tr.DISPATCH, f"dispatch mb{i}", t0, e.value - t0)))
        return join

    def _lane_ready(self, scn: Scenario, p: Params, cfg: Config, plan: Plan) -> list | None:
        """Per GPU (None where it does not bind): the time each minibatch's rows can be in at
        the earliest as our kernel's push lanes copy them (analytic.push_lane_chain): the most
        rows one comm program copies into minibatches 0..i (analytic.push_lane_rows), each at
        one program's share of the dispatch's copy time (its rows at the SMs' rate, its visits
        beside), slowed beside the GEMMs as analytic.copy_beside_gemm."""
        P, cc = self.P, cfg.comm_sms
        if P < 2 or _param(p, "push_lanes_bound") < 0.5:
            return None
        lanes = push_lane_rows(scn, int(cfg.minibatch), int(tile_rows(scn, p)),
                               _param(p, "tile_aligned_minibatches") >= 0.5,
                               _param(p, "source_order_rotated") >= 0.5, (int(cc),))
        out = [None] * P
        for d, (_, (work,)) in zip([0] if self.emulated else range(P), lanes):
            rows = float(sum(r.sum() for r in plan.rows[d]))
            if rows <= 0:
                continue
            scan = sum(float(push_visits(scn, P, cc, r.sum(), t)) * self.visit_s
                       for r, t in zip(plan.rows[d], plan.row_tiles[d])) if self.push_scan else 0.0
            alone = rows * self.act * self.dispatch_sm_scale / self.sm_rate + scan
            gemm = float(np.sum(plan.gate_up[d]) + np.sum(plan.down[d])) + plan.shared
            stretch = float(copy_beside_gemm(alone, gemm, self.slowdown))
            out[d] = np.asarray(work) * (alone * cc / rows) * stretch
        return out

    def _lane_at(self, d: int, i: int, t: float, wait: float = 0.0) -> float:
        """When minibatch i of GPU d is in, its copies done at t: no earlier than our push lanes
        have copied it (lane_ready), where they bind, and `wait` (its signal) after that."""
        lane = self.lane_ready[d] if self.lane_ready is not None else None
        return max(t, float(lane[i]) + wait) if lane is not None and i < len(lane) else t

    def _rows_in(self, d: int, i: int, ev, t: float) -> None:
        """Fire `ev` (minibatch i of GPU d is in and signalled: the join's time t includes the
        signal) at _lane_at."""
        at = self._lane_at(d, i, t, self.dispatch_wait)
        if at <= self.env.now:
            ev.succeed(at)
        else:
            self.env.timeout(at - self.env.now).callbacks.append(lambda _e: ev.succeed(at))

    def _signalled(self, d: int, ready, t: float) -> None:
        start = max(t, self.sig_free[d])
        self.sig_free[d] = end = start + self.sig_comm
        at = max(t + self.dispatch_wait, end + (self.dispatch_wait - self.release if self.dpush else 0.0))
        self.env.timeout(max(at - self.env.now, 0.0)).callbacks.append(lambda _e: ready.succeed(at))

    def open_combine(self, d: int, i: int) -> Join:
        self.combine_opened[d][i] += 1
        self._check(self.env.now >= self.compute_end_mb(d, i) - EPS_T, f"combine gpu{d} mb{i} before its compute")
        rows = self.plan.rows[d][i]
        eps = self.plan.endpoints[d]
        nz = np.nonzero(rows)[0]
        join = Join(self.env, int(rows.sum()))
        self.combine_joins[d][i] = join
        now, name = self.env.now, f"combine mb{i}"
        flow = (2 * d + 1) * self.E
        later = []
        walk: dict[int, list] = {}
        # our pull combine: every home's programs scan all of the minibatch's chunks for their
        # rows (analytic.pull_scan_chunks), whether or not it holds any of them
        scan = (np.ceil(np.ceil(rows.sum() / COPY_ROWS) / self.cfg.comm_sms) * self.scan_s
                if self.pull_scan else 0.0)
        for j in nz:
            e = int(eps[j])
            drv = d if self.kpush or self.emulated or j == 0 else e
            if j == 0:
                links, lat, trc = NO_PATH, 0.0, ()
            else:
                links, lat, trc = self._path(d, e, drv)
                if not (self.kpush or self.emulated):
                    lat *= self.read_trips
            sm_scale = self.combine_sm_scale
            if scan:  # home e's programs scan all of the minibatch's chunks
                sm_scale += scan * self.sm_rate / (float(rows[j]) * self.out)
            for rc in chunks(int(rows[j]), self.out, self.chunk):
                msg = Message(rc * self.out, rc, links, lat, (join, self.inbox[e]), flow + e,
                              1, name, now, sm_scale=sm_scale, trace=trc,
                              batch=None if self.owner_walk else i)
                if self.owner_walk:
                    walk.setdefault(e, []).append(msg)
                elif self.kpush or self.emulated or j == 0:
                    msg.send(self.sm[d], self.fluid)
                else:
                    later.append((e, msg))
        if self.owner_walk:  # each home's walk takes them (home_walk), its own at once, a
            for e in range(self.P):  # peer's once it has seen the owner's flag; a home with
                ev, msgs = self.walk[e][d][i], walk.get(e, [])  # no rows here still scans
                item = (msgs, 0.0 if msgs else scan)
                if e == d:
                    ev.succeed(item)
                else:
                    self.env.timeout(self.remote_wait).callbacks.append(
                        lambda _e, ev=ev, m=item: ev.succeed(m))
        if later:  # pull: each home reads once it has seen the owner's ready flag (remote signal)
            def go(_e, later=later):
                for e, msg in later:
                    self._enqueue(e, d, msg)
            self.env.timeout(self.remote_wait).callbacks.append(go)
        join.done.callbacks.append(lambda e, d=d, i=i, t0=now: self.spans.append(
            (d, tr.COMBINE, f"combine mb{i}", t0, e.value - t0)))
        return join

    def home_walk(self, e: int):
        """Our kernel's pull combine across GPUs (mok_kernels/megakernel.py): home e's comm SMs
        walk the owners in rank order, each owner's minibatches in order, and read a minibatch's
        rows once it is ready, so no read of owner q + 1 starts before owner q's last minibatch.
        The chunks it scans in a minibatch that holds none of its rows load its next copy."""
        owed = 0.0  # seconds of such scans not yet charged
        for q in range(self.P):
            for i in range(int(self.plan.minibatches[q])):
                msgs, scanned = yield self.walk[e][q][i]
                owed += scanned
                for msg in msgs:
                    if owed:
                        msg.sm_scale += owed * self.sm_rate / msg.bytes
                        owed = 0.0
                    if q == e:
                        msg.send(self.sm[e], self.fluid)
                    else:
                        self._enqueue(e, q, msg)
        if owed:  # scans after its last rows: the walk ends when they are done
            Message(owed * self.sm_rate, 0, NO_PATH, 0.0, (_WalkEnd(self, e),), (2 * e + 1) * self.E + e,
                    1, "pull combine scan", self.env.now).send(self.sm[e], self.fluid)

    def _count_dispatched(self, d: int) -> None:
        self.dispatched[d] += 1
        if self.dispatched[d] == int(self.plan.minibatches[d]):
            self.all_dispatched[d].succeed(self.env.now)

    def _gemm(self, d: int, name: str, alone: float, joined: float):
        """A GEMM of `alone` seconds on the compute SMs, or `joined` once the comm SMs join
        (when the GPU's last dispatch completes, possibly in the middle of this GEMM: they
        take over tiles, so the remaining fraction runs at the joined rate)."""
        env = self.env
        ev = self.all_dispatched[d]
        if not self.joins or ev.triggered:
            yield from self._run(d, name, joined if self.joins else alone)
            return env.now
        t0 = env.now
        self._gemms_running(d, 1)
        timer = env.timeout(alone)
        yield timer | ev
        if not timer.processed and env.now < t0 + alone:  # joined part-way
            left = (1.0 - (env.now - t0) / alone) * joined if alone > 0 else 0.0
            yield env.timeout(left)
        self._gemms_running(d, -1)
        self.spans.append((d, tr.COMPUTE_SMS, name, t0, env.now - t0))
        return env.now

    def _gemms_running(self, d: int, delta: int) -> None:
        """A GEMM starts (+1) or ends (-1) on GPU d's compute SMs: while one runs, its comm SMs
        copy at (1 - copy_slowdown_beside_gemm) of their rate (analytic.copy_beside_gemm)."""
        drv = self.sm[d]
        if self.slowdown <= 0 or drv.rid is None:
            return
        self.gemms_on[d] += delta
        self.fluid.set_capacity(drv.rid, drv.cap * (1.0 - self.slowdown if self.gemms_on[d] else 1.0))

    def _gemm_estimate(self, d: int, i: int) -> float:
        """Seconds the gate/up GEMM of minibatch i takes if it runs at the rate it starts at."""
        joined = self.joins and self.all_dispatched[d].triggered
        return float((self.plan.gate_up_joined if joined else self.plan.gate_up)[d][i])

    def open_epilogue_combine(self, d: int, i: int, gemm) -> Join:
        """Push combine from the down-GEMM epilogue: rows leave over the fabric as the GEMM
        runs; the combine completes no earlier than the GEMM (the `gemm` process) ends; local
        rows are written in place."""
        self.combine_opened[d][i] += 1
        rows = self.plan.rows[d][i]
        eps = self.plan.endpoints[d]
        join = Join(self.env, int(rows.sum()))
        self.combine_joins[d][i] = join
        now, name = self.env.now, f"combine mb{i}"
        flow = (2 * d + 1) * self.E
        local = []
        for j in np.nonzero(rows)[0]:
            e, r = int(eps[j]), int(rows[j])
            if j == 0:
                local.append((e, r))
                continue
            links, lat, trc = self._path(d, e, -1)
            for rc in chunks(r, self.out, self.chunk):
                Message(rc * self.out, rc, links, lat, (_Gated(join, gemm), _Gated(self.inbox[e], gemm)),
                        flow + e, 1, name, now, trace=trc).send(None, self.fluid)

        def done(_e):
            for e, r in local:
                join.add(self.env.now, r)
                self.inbox[e].add(self.env.now, r)
        gemm.callbacks.append(done)
        join.done.callbacks.append(lambda e, d=d, i=i, t0=now: self.spans.append(
            (d, tr.COMBINE, f"combine mb{i} (epilogue)", t0, e.value - t0)))
        return join

    def compute_end_mb(self, d: int, i: int) -> float:
        ev = self.computed[d][i]
        return ev.value if ev.triggered else float("inf")

    # --- per-GPU processes ---
    def _wraps(self, cum: int, r: int) -> int:
        mac = self.cfg.macrobatch
        return max(-(-(cum + r) // mac) - max(-(-cum // mac), 1), 0)

    def _ring_span(self, d: int, t0: float) -> None:
        if self.env.now > t0:
            self.ring_wait[d] += self.env.now - t0
            self.spans.append((d, tr.COMM_SMS if self.msg_trace is None else tr.DISPATCH,
                               "ring wait", t0, self.env.now - t0))

    def _take_slots(self, d: int, r: int):
        """Back-pressure: the comm SMs wait until the ring has `r` free row slots."""
        t0 = self.env.now
        yield self.ring[d].get(r)
        self._ring_span(d, t0)

    def _take_ring(self, d: int, r: int, cum: int):
        """Before a minibatch's copies: its slot-recycling barriers (ring_wrap_us per wrap), and
        on a ring that holds all rows, its slots at once (they are never short)."""
        t0 = self.env.now
        if r > 0 and not self.tight[d]:
            yield self.ring[d].get(r)
        w = self._wraps(cum, r)
        if w:
            yield self.env.timeout(w * self.p["ring_wrap_us"] * US)
            self.ring_wrap[d] += w * self.p["ring_wrap_us"] * US
        self._ring_span(d, t0)

    def _free_ring(self, d: int, i: int, gemm_start: float, gemm_s: float, done):
        """Gate/up tiles free their rows' ring slots row tile by row tile, in order. The refill
        overlaps the last ring_refill_overlap share of the gate/up GEMM (the params file; 0:
        all slots are freed when the GEMM ends, as a per-minibatch counter does); whatever is
        left is freed when the GEMM ends (`done`, e.g. earlier once comm SMs joined)."""
        r = int(self.plan.rows[d][i].sum())
        tiles = max(int(self.plan.row_tiles[d][i]), 1)
        q, rem = divmod(r, tiles)
        parts = [q + 1] * rem + [q] * (tiles - rem)
        t_first = gemm_start + (1.0 - self.refill_overlap) * gemm_s
        freed = 0
        for k, n in enumerate(parts):
            at = t_first + self.refill_overlap * gemm_s * (k + 1) / tiles
            if done.triggered or at >= gemm_start + gemm_s:
                break
            if at > self.env.now:
                yield self.env.timeout(at - self.env.now) | done
                if done.triggered:
                    break
            if n:
                self.ring[d].put(n)
                freed += n
        if not done.triggered:
            yield done
        if r - freed:
            self.ring[d].put(r - freed)

    def comm(self, d: int):
        cum = 0
        for i in range(int(self.plan.minibatches[d])):
            r = int(self.plan.rows[d][i].sum())
            yield from self._take_ring(d, r, cum)
            cum += r
            yield from self.open_dispatch(d, i)
            if self.schedule == "naive":  # comm walks dispatch i, combine i, in order
                yield self.ready[d][i]
                t = yield self.computed[d][i]
                if self.epilogue:
                    yield self.combine_joins[d][i].done
                    continue
                yield self.env.timeout(max(t + self.sig_local - self.env.now, 0.0))
                yield self.open_combine(d, i).done

    def compute(self, d: int):
        """The compute SMs take GEMMs from one work list, in order: gate/up of the shared expert,
        gate/up of minibatch 0, down of the shared expert, then gate/up of minibatch i+1 before
        down of minibatch i (mok_kernels/megakernel.py's work counter; with the kernel's
        list_lag L, gate/up of minibatch i+L before down of minibatch i), so a minibatch's rows
        are released to the ring as early as they can be. In that order, as the kernel: its
        programs take items from one atomic counter and a program that took a gate/up item spins
        until the minibatch's rows are in, so when a gate/up section has at least as many items
        (row tiles x I / tile_n) as there are compute SMs, no program reaches the down items
        behind it (the shared expert's, the previous minibatch's) before the rows arrive
        (analytic.in_order_wait). A smaller section leaves programs free, and the published
        design (wave_sync 1) has no such list: then the next GEMM in the list that can run does."""
        if self.schedule == "naive":
            yield from self._compute_in_order(d)
            return
        env, plan = self.env, self.plan
        M, lag = int(plan.minibatches[d]), self.scn.list_lag
        # the kernel's list with its lag L: minibatch i's down after minibatch i+L's gate/up
        # (the shared expert, -1 here, is the kernel's batch 0), the last L downs at the end
        work = [("gu", -1)] if plan.shared > 0 else []
        for i in range(M):
            work.append(("gu", i))
            if i - lag >= -1:
                work.append(("dn", i - lag))
        work += [("dn", j) for j in range(max(M - lag, -1), M)]
        work = [w for w in work if w[1] >= 0 or plan.shared > 0]
        cx = self.scn.hardware.sms - self.cfg.comm_sms
        # the gate/up items still in the list: a set, so a down item's check is not a walk of the
        # list (with thousands of minibatches that walk, per item, took minutes)
        gu_left = {i for kind, i in work if kind == "gu"}
        def runnable(w) -> bool:  # gate/up once its rows are in, down once its gate/up ran
            kind, i = w
            return (i not in gu_left) if kind == "dn" else (i < 0 or self.ready[d][i].triggered)

        while work:
            k = next((k for k, w in enumerate(work) if runnable(w)), len(work))
            kind, i = work[0]
            if k > 0 and kind == "gu" and bool(in_order_wait(self.scn, self.p, plan.row_tiles[d][i], cx)):
                k = len(work)  # every program holds one of its items: the list waits
            if k == len(work):  # nothing can run: wait for the first minibatch still in flight
                yield self.ready[d][work[0][1]]
                continue
            kind, i = work.pop(k)
            if kind == "gu":
                gu_left.discard(i)
                yield from self._gate_up(d, i)
            else:
                yield from self._down(d, i)
        self.compute_end[d] = env.now

    def _gate_up(self, d: int, i: int):
        env, plan = self.env, self.plan
        if i < 0:
            sg, _, sgj, _ = plan.shared_split
            yield from self._gemm(d, "shared expert", sg, sgj)  # its gate/up
            return
        t_ready = self.ready[d][i].value
        self._check(env.now >= t_ready - EPS_T, f"gate/up gpu{d} mb{i} before its dispatch")
        if i == 0:
            self.first_gemm[d] = env.now
        self._gemm_args(d, i)
        r = int(plan.rows[d][i].sum())
        if self.tight[d]:  # slots come free while the gate/up tiles run
            gu_done = env.event()
            env.process(self._free_ring(d, i, env.now, self._gemm_estimate(d, i), gu_done))
        yield from self._gemm(d, f"gate_up+swiglu mb{i}", plan.gate_up[d][i], plan.gate_up_joined[d][i])
        if self.tight[d]:
            gu_done.succeed(env.now)
        elif r > 0:
            self.ring[d].put(r)

    def _down(self, d: int, i: int):
        env, plan = self.env, self.plan
        if i < 0:
            _, sd, _, sdj = plan.shared_split
            yield from self._gemm(d, "shared expert down", sd, sdj)
            return
        ovh = self.p["minibatch_overhead_us"] * US
        gemm = self._gemm(d, f"down mb{i}", plan.down[d][i] + ovh, plan.down_joined[d][i] + ovh * plan.join_scale)
        if self.epilogue:  # rows leave as tiles finish, none arrives before the GEMM ends
            proc = env.process(gemm)
            self.open_epilogue_combine(d, i, proc)
            yield proc
        else:
            yield from gemm
        self.computed[d][i].succeed(env.now)
        if self.schedule == "published" and not self.epilogue:  # a local signal: combine
            go = env.timeout(self.sig_local)
            if self.combine_after_dispatch and not self.all_dispatched[d].triggered:
                go = env.all_of([go, self.all_dispatched[d]])
            go.callbacks.append(lambda _e, d=d, i=i: self.open_combine(d, i))

    def _compute_in_order(self, d: int):
        """Naive schedule: dispatch i, compute i, combine i in order; the shared expert last."""
        env, plan = self.env, self.plan
        for i in range(int(plan.minibatches[d])):
            yield self.ready[d][i]
            yield from self._gate_up(d, i)
            yield from self._down(d, i)
        self.compute_end[d] = env.now
        if plan.shared > 0:
            yield from self._run(d, "shared expert", plan.shared)
            self.compute_end[d] = env.now

    def _run(self, d: int, name: str, dur: float):
        t0, dur = self.env.now, float(dur)
        self._gemms_running(d, 1)
        yield self.env.timeout(dur)
        self._gemms_running(d, -1)
        self.spans.append((d, tr.COMPUTE_SMS, name, t0, dur))

    def _gemm_args(self, d: int, i: int) -> None:
        """Trace args of minibatch i's GEMMs: rows, row tiles, and whole waves on the SMs."""
        m, p = self.scn.model, self.p
        sms = self.scn.hardware.sms - self.cfg.comm_sms
        if self.joins and self.all_dispatched[d].triggered:
            sms += int(_param(p, "comm_join_share") * self.cfg.comm_sms)
        tiles = int(self.plan.row_tiles[d][i])
        rows = int(self.plan.rows[d][i].sum())
        for name, n in ((f"gate_up+swiglu mb{i}", 2 * m.expert_width), (f"down mb{i}", m.hidden)):
            out_tiles = tiles * -(-n // int(p["gemm_tile_n"]))
            self.span_args[(d, name)] = {"rows": rows, "row_tiles": tiles, "tiles": out_tiles,
                                         "sms": sms, "waves": -(-out_tiles // sms)}

    def run(self) -> None:
        for d in range(self.P):
            self.env.process(self.compute(d))
            self.env.process(self.comm(d))
            if self.owner_walk:
                self.env.process(self.home_walk(d))
        self.env.run()
        self._finish()

    # --- results and invariants ---
    def _finish(self) -> None:
        P, plan = self.P, self.plan
        # pushed outputs come with a completion signal from every peer; pulled ones are local
        sig_end = self.remote_wait if self.kpush else self.sig_local
        home_t = np.zeros(P)
        owner_t = np.zeros(P)
        unfired = [f"gpu{d} {op} mb{i}" for d in range(P) for op, js in
                   (("dispatch", self.dispatch_joins[d]), ("combine", self.combine_joins[d]))
                   for i, j in enumerate(js) if j is None or j.fired_at is None]
        unfired += [f"inbox {e}" for e, j in enumerate(self.inbox) if j.fired_at is None]
        if unfired:
            raise SimInvariantError(f"operations never completed (rows lost): {unfired[:5]}")
        for g in range(P):
            eps = [g] + ([P + int(plan.groups[g])] if plan.grouped else [])
            home_t[g] = max(max(self.inbox[e].fired_at for e in eps), self.walk_end[g])
            cj = self.combine_joins[g]
            self._check(all(j is not None for j in cj), f"gpu{g}: a minibatch was never combined")
            owner_t[g] = max(j.fired_at for j in cj if j is not None)
        self.home_done = home_t
        # measured wait between a minibatch's last dispatched byte and its compute being told
        self.signal_wait = np.array([np.mean([j.fired_at - j.t for j in self.dispatch_joins[g]])
                                     for g in range(P)])
        self.owner_done = owner_t
        if self.scn.hardware.emulated_ranks:
            # one GPU runs one rank of the group, its peers' buffers in local memory: it ends when
            # its own GEMMs and combines are done and signalled; no peer's outputs come home
            self.pipe_end = np.maximum(owner_t, self.compute_end) + sig_end
        else:
            self.pipe_end = np.maximum.reduce([home_t + sig_end, owner_t, self.compute_end])
        # invariants: every dispatched row combined exactly once, bytes conserved per link
        t = traffic(self.scn)
        for d in range(P):
            disp = sum(j.rows for j in self.dispatch_joins[d])
            comb = sum(j.rows for j in self.combine_joins[d])
            want = int(t.rows[:, d, :].sum())
            self._check(disp == want, f"gpu{d}: dispatched {disp} rows, routing says {want}")
            self._check(comb == disp, f"gpu{d}: combined {comb} rows of {disp} dispatched")
            self._check(bool((self.combine_opened[d] == 1).all()), f"gpu{d}: a minibatch combined twice or never")
        got = np.array([j.rows for j in self.inbox])
        self._check(bool((got == self.expected_home_rows).all()), "home rows differ from the rows sent home")
        self._check(int(got.sum()) == P * self.scn.tokens * self.scn.model.top_k,
                    "combined rows differ from tokens x top_k")
        self._check_fabric()
        if self.violations:
            raise SimInvariantError("; ".join(self.violations[:5]))
