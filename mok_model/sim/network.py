"""The fabric as a network: a networkx graph of link resources, routes, and flows that share
every link max-min fairly (flow level, progressive filling).

Graph (from the hardware preset's topology fields): GPU nodes; per scale-up domain one tier of
NVLink switches (`switch_planes` planes: every GPU has one link group to each plane and stripes
its traffic over them in proportion to their links), or two tiers (leaf switches of `leaf_gpus`
GPUs joined by spine links of `leaf_gpus x link / tier_oversubscription` per leaf and
direction); when the EP group spans domains, one scale-out NIC per GPU on a rail-optimized
network (GPU of local rank r on rail switch r; rails joined by a spine). A route is the
shortest path (NVLink preferred over NICs; traffic between rails crosses the rail spine: NCCL's
PXN, NVLink to the rail-aligned GPU first, is not modelled); its links are resources with a byte
rate, and a flow's latency is the sum of its hops' latencies.

Striped planes are exact as one resource per GPU and direction: every flow of a GPU loads plane p
with the same share w_p of its rate, so sum_f w_p x_f <= c_p for all p is sum_f x_f <=
min_p c_p / w_p. A failed plane (factor 0) leaves the striping; a degraded one slows it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import networkx as nx
import numpy as np

from ..errors import MokInputError

# The least share of its bandwidth a degraded link keeps (0 fails it): below, a typo for 0 (at
# 1e-320 the simulator's rates overflowed: internal error; at 1e-300 it printed 10^300 ms)
MIN_DEGRADE = 1e-6
DEGRADE_HELP = ("--degrade takes TARGET:FACTOR[,TARGET:FACTOR...] with FACTOR 0 (failed) or in "
                f"[{MIN_DEGRADE:g}, 1], a plain number (ASCII, no spaces, no '_'); TARGET is "
                "gpuN (its NVLink links, both directions), gpuN.pK (its link to plane K), nicN "
                "(its scale-out NIC), leafD.L (leaf L of domain D: its spine links), tier (every "
                "leaf-to-spine link) or rails (every rail-to-spine link)")
_TARGET = re.compile(r"^(gpu(\d+)(\.p(\d+))?|nic(\d+)|leaf(\d+)\.(\d+)|tier|rails)\Z", re.ASCII)


def parse_degrade(spec: str) -> list[tuple[str, float]]:
    """[(target, factor)] of a --degrade spec ("" for none); raises MokInputError naming the bad
    part: an empty element ("gpu3:0.5,,tier:0.5") or a target named twice is refused too."""
    from ..cli import plain_number  # late: the CLI imports this module

    out = []
    if not (spec or "").strip():
        return out
    for part in spec.split(","):   # as written: ' gpu3:0.5' or 'gpu3:0.5 ' is no plain number
        if not part:
            raise MokInputError(f"--degrade {spec!r} has an empty element; {DEGRADE_HELP}")
        target, _, f = part.partition(":")
        if _TARGET.match(target):  # one name a target: gpu03 is gpu3 (so named twice is caught)
            target = re.sub(r"\d+", lambda n: str(int(n.group())), target)
        if target in (t for t, _ in out):
            raise MokInputError(f"--degrade {spec!r} names {target} twice; give each target once "
                                f"(its FACTOR is a share of the healthy bandwidth)")
        try:
            factor = float(plain_number(f))    # float() alone reads ' 0.5', '٠.٥' and '0.5_0'
        except ValueError:
            factor = -1.0
        if not _TARGET.match(target) or not (factor == 0.0 or MIN_DEGRADE <= factor <= 1.0):
            raise MokInputError(f"--degrade {part!r}: {DEGRADE_HELP}")
        out.append((target, factor))
    return out


def without_scale_out(spec: str) -> str:
    """A --degrade spec less its scale-out targets (nicN, rails): what a pass on one scale-up
    domain (analytic.one_domain, the simulator's split of the scale_out term) keeps of it."""
    return ",".join(f"{t}:{f!r}" for t, f in parse_degrade(spec)    # repr: the factor exactly
                    if not (t == "rails" or t.startswith("nic")))


@dataclass
class Network:
    """Link resources of one EP group: capacities (bytes/s), routes as resource tuples."""

    graph: nx.DiGraph
    names: list  # resource names
    cap: np.ndarray  # (R,) bytes per second
    domain: np.ndarray  # (P,) scale-up domain of each GPU
    leaf: np.ndarray  # (P,) first-tier switch (global index) of each GPU
    rail: np.ndarray  # (P,) rail (local rank) of each GPU
    res: dict  # (kind, index) -> resource id
    _templates: dict
    slack: set = None  # switch-to-switch resources that can never bind (see build_network)

    def __post_init__(self) -> None:
        self._lists = (self.domain.tolist(), self.leaf.tolist(), self.rail.tolist())

    def hops(self, a: int, b: int) -> tuple:
        """Link kinds of the route gpu a -> gpu b, e.g. ("nvlink-up", "nvlink-down"): the
        networkx shortest path of the first pair of each class (same domain, leaf, rail)."""
        d, lf, rl = self._lists
        key = (d[a] == d[b], lf[a] == lf[b], rl[a] == rl[b])
        t = self._templates.get(key)
        if t is None:
            path = nx.shortest_path(self.graph, f"gpu{a}", f"gpu{b}", weight="cost")
            t = tuple(self.graph.edges[u, v]["kind"] for u, v in zip(path, path[1:]))
            self._templates[key] = t
        return t

    def latency(self, kinds: tuple) -> float:
        """Seconds of a route's hop latencies."""
        return sum(self.graph.graph["latency"][k] for k in kinds)


def _plane_shares(hw) -> np.ndarray:
    return np.full(hw.switch_planes, 1.0 / hw.switch_planes)


def _port(nominal: float, shares: np.ndarray, factors: np.ndarray) -> float:
    """Capacity of a GPU's striped link group: failed planes leave the striping, the rest carry
    their share of the traffic, so the slowest plane relative to its share binds."""
    alive = factors > 0
    if not alive.any():
        return 0.0
    w = shares[alive] / shares[alive].sum()
    return float(np.min(nominal * shares[alive] * factors[alive] / w))


def build_network(scn, p) -> Network:
    """The graph and link resources of scenario `scn` (its hardware's topology and --degrade)."""
    hw, P = scn.hardware, scn.ep
    eff = p["link_eff"]
    D = scn.domains
    size = hw.domain_size if D > 1 else max(P, 1)
    gpu = np.arange(P)
    domain = gpu // size if D > 1 else np.zeros(P, dtype=int)
    local = gpu % size if D > 1 else gpu
    two = hw.switch_tiers >= 2 and hw.leaf_gpus < size
    per_leaf = hw.leaf_gpus if two else size
    leaves_per_dom = -(-size // per_leaf)
    leaf = domain * leaves_per_dom + local // per_leaf
    rail = local
    nv = hw.link_gbps * 1e9 * eff
    so = hw.scaleout_gbps * 1e9 * eff
    lat = {"nvlink-up": hw.link_latency_us * 1e-6, "nvlink-down": 0.0,
           "tier-up": hw.tier_latency_us * 1e-6, "tier-down": 0.0,
           "nic-up": hw.scaleout_latency_us * 1e-6, "nic-down": 0.0, "rail-up": 0.0, "rail-down": 0.0}
    deg = parse_degrade(hw.degrade)
    shares = _plane_shares(hw)
    plane_f = np.ones((P, hw.switch_planes))
    nic_f = np.ones(P)
    leaf_f = np.ones(int(leaf.max()) + 1 if P else 1)
    rail_f = 1.0
    for target, f in deg:
        m = _TARGET.match(target)
        if m.group(2) is not None:
            g = int(m.group(2))
            if g >= P:
                raise MokInputError(f"--degrade {target}: the EP group has GPUs 0..{P - 1}")
            if m.group(4) is not None:
                k = int(m.group(4))
                if k >= hw.switch_planes:
                    raise MokInputError(f"--degrade {target}: {hw.name} has planes 0..{hw.switch_planes - 1}")
                plane_f[g, k] *= f
            else:
                plane_f[g] *= f
        elif m.group(5) is not None:
            g = int(m.group(5))
            if g >= P or D == 1:
                raise MokInputError(f"--degrade {target}: no such scale-out NIC (GPUs 0..{P - 1}, "
                                    f"{D} domain(s))")
            nic_f[g] *= f
        elif m.group(6) is not None:
            k = int(m.group(6)) * leaves_per_dom + int(m.group(7))
            if not two or int(m.group(7)) >= leaves_per_dom or k >= len(leaf_f):
                has = (f"leaves leafD.L with L 0..{leaves_per_dom - 1}" if two
                       else "one switch tier, no leaves")
                raise MokInputError(f"--degrade {target}: {hw.name} at EP {P} has no such leaf "
                                    f"(it has {has})")
            leaf_f[k] *= f
        elif target == "tier":
            if not two:
                raise MokInputError(f"--degrade tier: {hw.name} at EP {P} has one switch tier")
            leaf_f *= f
        else:
            if D == 1:
                raise MokInputError("--degrade rails: the EP group does not leave its domain")
            rail_f *= f
    g_ = nx.DiGraph(latency=lat)
    for k in range(len(leaf_f)):
        g_.add_node(f"sw{k}", kind="switch")
        if two:
            g_.add_edge(f"sw{k}", f"spine{k // leaves_per_dom}", kind="tier-up", cost=1.0)
            g_.add_edge(f"spine{k // leaves_per_dom}", f"sw{k}", kind="tier-down", cost=1.0)
    for g in range(P):
        n = f"gpu{g}"
        g_.add_node(n, kind="gpu")
        g_.add_edge(n, f"sw{leaf[g]}", kind="nvlink-up", cost=1.0, planes=list(plane_f[g]))
        g_.add_edge(f"sw{leaf[g]}", n, kind="nvlink-down", cost=1.0, planes=list(plane_f[g]))
        if D > 1:
            g_.add_edge(n, f"rail{rail[g]}", kind="nic-up", cost=10.0)
            g_.add_edge(f"rail{rail[g]}", n, kind="nic-down", cost=10.0)
    if D > 1:
        for r in range(size):
            g_.add_edge(f"rail{r}", "railspine", kind="rail-up", cost=0.5)
            g_.add_edge("railspine", f"rail{r}", kind="rail-down", cost=0.5)
    names, caps, res = [], [], {}

    def add(key, name, c):
        res[key] = len(names)
        names.append(name)
        caps.append(c)

    for g in range(P):
        c = _port(nv, shares, plane_f[g])
        add(("nvlink-up", g), f"gpu{g} nvlink out", c)
        add(("nvlink-down", g), f"gpu{g} nvlink in", c)
        if D > 1:
            add(("nic-up", g), f"gpu{g} nic out", so * nic_f[g])
            add(("nic-down", g), f"gpu{g} nic in", so * nic_f[g])
    if two:
        up = per_leaf * nv / max(hw.tier_oversubscription, 1.0)
        for k in range(len(leaf_f)):
            add(("tier-up", k), f"leaf{k // leaves_per_dom}.{k % leaves_per_dom} to spine", up * leaf_f[k])
            add(("tier-down", k), f"spine to leaf{k // leaves_per_dom}.{k % leaves_per_dom}", up * leaf_f[k])
    if D > 1:
        up = D * so / max(hw.rail_oversubscription, 1.0)
        for r in range(size):
            add(("rail-up", r), f"rail{r} to spine", up * rail_f)
            add(("rail-down", r), f"spine to rail{r}", up * rail_f)
    dead = [n for n, c in zip(names, caps) if c <= 0]
    if dead:
        hint = "degrade by a factor above 0"
        if "nvlink" in dead[0]:
            hint += (f"; {hw.name} has one NVLink plane, so failing it cuts the GPU off"
                     if hw.switch_planes == 1 else
                     f", or fail at most {hw.switch_planes - 1} of a GPU's {hw.switch_planes} planes")
        raise MokInputError(f"--degrade {hw.degrade!r} leaves no bandwidth on {dead[0]}: the pass "
                            f"could never finish ({hint})")
    # a spine or rail link at least as fast as all the ports that feed it can never bind (every
    # flow through it also crosses one of them): routes leave it out, which changes no rate
    cap = np.array(caps, dtype=np.float64)
    slack = set()
    feeds = [("tier-up", "nvlink-up", leaf), ("tier-down", "nvlink-down", leaf),
             ("rail-up", "nic-up", rail), ("rail-down", "nic-down", rail)]
    for kind, port, cell in feeds:
        for k in np.unique(cell):
            rid = res.get((kind, int(k)))
            if rid is not None:
                fed = sum(cap[res[port, int(g)]] for g in np.nonzero(cell == k)[0])
                if cap[rid] >= fed * (1.0 - 1e-12):
                    slack.add(rid)
    return Network(g_, names, cap, domain, leaf, rail, res, {}, slack)


# ---------------------------------------------------------------- max-min fair sharing


def maxmin(res: np.ndarray, w: np.ndarray, cap: np.ndarray, rtol: float = 1e-9) -> np.ndarray:
    """Max-min fair rates (progressive filling). res (F, H) resource ids per flow (pad with an
    id whose cap is inf), w (F, H) the load one unit of the flow's rate puts on each (0 for
    pads), cap (R,) capacities.

    Progressive filling raises every unfrozen flow together; a resource saturates at level
    (cap - load of frozen flows) / (load per unit of unfrozen flows), and its flows freeze there.
    Freezing a flow below another resource's level only raises that level, so every resource
    whose level is the lowest among the resources it shares unfrozen flows with saturates at
    exactly its level: each round freezes all of them at once (the same answer, fewer rounds)."""
    return maxmin_hops(np.ascontiguousarray(res.T), np.ascontiguousarray(w.T), cap, rtol)


def maxmin_hops(r: np.ndarray, ww: np.ndarray, cap: np.ndarray, rtol: float = 1e-9) -> np.ndarray:
    """maxmin of flows given hop by hop: r and ww (H, F), C-contiguous (row ops are fast)."""
    H, F = r.shape
    rate = np.zeros(F)
    if not F:
        return rate
    R = len(cap)
    free = cap.astype(np.float64).copy()  # capacity not taken by frozen flows
    ids = np.arange(F)
    keep_frac = 1.0 - rtol
    level = np.empty(R)
    while True:
        load = np.bincount(r.ravel(), ww.ravel(), minlength=R)
        level.fill(np.inf)
        np.divide(np.maximum(free, 0.0), load, out=level, where=load > 0)
        lv = level.take(r)  # (H, n): pads (w = 0) sit at inf
        fmin = lv[0].copy()  # the lowest level among each flow's resources (a row at a time is
        for h in range(1, H):  # faster than a reduction over the axis)
            np.minimum(fmin, lv[h], out=fmin)
        # a resource is not (yet) a bottleneck if one of its flows meets a lower level elsewhere
        # (pads always are: every flow meets a finite level)
        blocked = np.zeros(R, dtype=bool)
        blocked[r[(level * keep_frac).take(r) > fmin]] = True
        bottleneck = (~blocked).take(r)
        hit = bottleneck[0]
        for h in range(1, H):
            hit |= bottleneck[h]
        done = hit.nonzero()[0]
        if not len(done):
            raise ValueError("a flow crosses no finite resource")
        rate[ids[done]] = fmin[done]
        if len(done) == len(ids):
            return rate
        # the frozen flows' loads (the others would add zeros: the same sums)
        free -= np.bincount(r.take(done, axis=1).ravel(), (ww.take(done, axis=1) * fmin[done]).ravel(),
                            minlength=R)
        keep = (~hit).nonzero()[0]
        ids, r, ww = ids[keep], r.take(keep, axis=1), ww.take(keep, axis=1)


def peer_groups(cells: np.ndarray, max_peers: int) -> np.ndarray:
    """Group index of every GPU, (P,). GPUs stay their own group while P - 1 <= max_peers;
    beyond that, contiguous GPUs of one cell (leaf switch) are merged so a GPU sees about
    max_peers / 2 peer groups (flows, and so max-min solves, scale with the groups: EP 576
    simulates in about half the time, docs/sim-study.md gives what it moves)."""
    P = len(cells)
    if P - 1 <= max_peers:
        return np.arange(P)
    size = -(-P // max(max_peers // 2, 1))
    grp = np.empty(P, dtype=int)
    nxt = 0
    for k in np.unique(cells):
        members = np.nonzero(cells == k)[0]
        grp[members] = nxt + np.arange(len(members)) // size
        nxt = grp[members].max() + 1
    return grp


class Fabric:
    """The simulation's view of the network: endpoints (GPUs, then merged peer groups whose
    ports are their members' summed), each with its comm SMs as a resource when sm_rate > 0,
    and routes between endpoints as ((resource id, load), ...) with their latency. With
    channel_rate > 0, each endpoint also has a sending and a receiving channel resource of that
    rate a member (`channels`: NCCL's channels per peer, baselines.nccl_peers_cap)."""

    def __init__(self, net: Network, groups: np.ndarray | None, sm_rate: float,
                 channel_rate: float = 0.0):
        P = len(net.domain)
        self.net, self.P = net, P
        self.members = [np.array([g]) for g in range(P)]
        if groups is not None:
            self.members += [np.nonzero(groups == k)[0] for k in range(int(groups.max()) + 1)]
        self.rep = [int(m[0]) for m in self.members]
        caps = list(net.cap)
        names = list(net.names)
        self.port: dict = {}
        for e, m in enumerate(self.members):
            for kind in ("nvlink-up", "nvlink-down", "nic-up", "nic-down"):
                if (kind, 0) not in net.res:
                    continue
                if e < P:
                    self.port[kind, e] = net.res[kind, e]
                else:
                    self.port[kind, e] = len(caps)
                    caps.append(float(sum(net.cap[net.res[kind, int(g)]] for g in m)))
                    names.append(f"group{e - P} {kind}")
        self.sm: list = [None] * len(self.members)
        if sm_rate > 0:
            for e, m in enumerate(self.members):
                self.sm[e] = len(caps)
                caps.append(sm_rate * len(m))
                names.append(f"endpoint{e} comm SMs")
        self.channels: tuple[list, list] | None = None
        if channel_rate > 0:
            self.channels = ([], [])
            for side, label in zip(self.channels, ("out", "in")):
                for e, m in enumerate(self.members):
                    side.append(len(caps))
                    caps.append(channel_rate * len(m))
                    names.append(f"endpoint{e} channels {label}")
        self.cap = np.array(caps, dtype=np.float64)
        self.names = names
        self._paths: dict = {}

    def path(self, a: int, b: int) -> tuple[tuple, float, bool]:
        """((resource ids), (loads)), latency (s) and whether it leaves the domain (NIC), of a
        message from endpoint a to endpoint b."""
        key = (a, b)
        hit = self._paths.get(key)
        if hit is not None:
            return hit
        net = self.net
        ra, rb = self.rep[a], self.rep[b]
        if ra == rb:  # a GPU and the group it belongs to: another member stands in for the group
            other = [int(g) for g in self.members[b if b >= self.P else a] if int(g) != ra]
            if b >= self.P and other:
                rb = other[0]
            elif a >= self.P and other:
                ra = other[0]
        kinds = net.hops(ra, rb) if ra != rb else ("nvlink-up", "nvlink-down")
        out: list = []
        for k in kinds:
            if k in ("nvlink-up", "nic-up"):
                out.append((self.port[k, a], 1.0))
            elif k in ("nvlink-down", "nic-down"):
                out.append((self.port[k, b], 1.0))
            elif k in ("tier-up", "tier-down"):
                out.append((net.res[k, net._lists[1][ra if k == "tier-up" else rb]], 1.0))
            else:  # rails: a group's traffic spreads over its members' rails
                m = self.members[a if k == "rail-up" else b]
                ids, cnt = np.unique(net.rail[m], return_counts=True)
                out += [(net.res[k, int(r)], c / len(m)) for r, c in zip(ids, cnt)]
        out = [(r, x) for r, x in out if r not in net.slack]
        hit = ((tuple(r for r, _ in out), tuple(x for _, x in out)), net.latency(kinds), "nic-up" in kinds)
        self._paths[key] = hit
        return hit


MERGE_MIN_S, MERGE_PER_GPU_S = 4e-6, 1e-8  # see merge_time


def merge_time(scn) -> float:
    """Seconds within which flow starts and ends share one max-min recomputation: 4 us, or
    10 ns per GPU above 400 GPUs (5.8 us at EP 576). A simulator setting, not a hardware one:
    it bounds the recomputations (each costs a max-min solve over every active flow);
    docs/sim-study.md measures what it moves against exact recomputation (merge_s=0)."""
    return max(MERGE_MIN_S, MERGE_PER_GPU_S * scn.ep)


def fabric_summary(net: Network, fluid) -> dict:
    """What the network model did: topology, links, flows and rate recomputations."""
    kinds = sorted({k for _, _, k in net.graph.edges(data="kind")})
    return {"nodes": net.graph.number_of_nodes(), "links": net.graph.number_of_edges(),
            "link_kinds": kinds, "flows": int(fluid.flows), "rate_solves": int(fluid.solves),
            "merge_us": fluid.merge * 1e6}
