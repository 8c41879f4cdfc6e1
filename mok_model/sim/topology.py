"""The fabric as a graph (networkx): GPU nodes, switch nodes and directed links with capacities.

Every GPU has an egress and an ingress link to its domain's one-hop switch (NVLink); when the EP
group spans several domains, every GPU also has a NIC pair to a scale-out switch. A route is the
list of link kinds a message crosses; another topology plugs in by building another graph with the
same edge attributes (`kind`, `gbps`, `latency_us`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import networkx as nx
import numpy as np

from ..params import Params
from ..scenario import Scenario


@dataclass
class Topology:
    """A directed graph of GPUs and switches; `route` answers which link kinds a message crosses."""

    graph: nx.DiGraph
    domain: np.ndarray  # (P,) domain index of each GPU
    _routes: dict = field(default_factory=dict)

    def route(self, src: int, dst: int) -> tuple[tuple[str, str], ...]:
        """((direction, kind), ...) for a message src -> dst, e.g. (("out", "nvlink"), ("in", "nvlink")).
        Cached per pair of domains: GPUs of one domain see the same structure."""
        key = (int(self.domain[src]), int(self.domain[dst]), src == dst)
        if key not in self._routes:
            path = nx.shortest_path(self.graph, f"gpu{src}", f"gpu{dst}", weight="cost")
            hops = []
            for a, b in zip(path, path[1:]):
                e = self.graph.edges[a, b]
                hops.append(("out" if a.startswith("gpu") else "in", e["kind"]))
            self._routes[key] = tuple(hops)
        return self._routes[key]

    def link(self, direction: str, kind: str) -> tuple[float, float]:
        """(bytes per second, latency in seconds) of one GPU's link of this kind and direction."""
        return self.graph.graph["links"][(direction, kind)]


def build_topology(scn: Scenario, p: Params) -> Topology:
    """One-hop switch per scale-up domain, plus a scale-out switch when the EP group spans domains."""
    hw, P = scn.hardware, scn.ep
    eff = p["link_eff"]
    domains = scn.domains
    dom = np.arange(P) // hw.domain_size if domains > 1 else np.zeros(P, dtype=int)
    g = nx.DiGraph()
    nv = (hw.link_gbps * 1e9 * eff, hw.link_latency_us * 1e-6)
    links = {("out", "nvlink"): nv, ("in", "nvlink"): nv}
    for k in range(domains):
        g.add_node(f"nvswitch{k}", kind="switch")
    if domains > 1:
        so = (hw.scaleout_gbps * 1e9 * eff, hw.scaleout_latency_us * 1e-6)
        links.update({("out", "nic"): so, ("in", "nic"): so})
        g.add_node("scaleout", kind="switch")
    for gpu in range(P):
        n = f"gpu{gpu}"
        g.add_node(n, kind="gpu")
        sw = f"nvswitch{dom[gpu]}"
        g.add_edge(n, sw, kind="nvlink", gbps=nv[0] / 1e9, latency_us=nv[1] * 1e6, cost=1e9 / nv[0])
        g.add_edge(sw, n, kind="nvlink", gbps=nv[0] / 1e9, latency_us=0.0, cost=1e9 / nv[0])
        if domains > 1:
            g.add_edge(n, "scaleout", kind="nic", gbps=so[0] / 1e9, latency_us=so[1] * 1e6, cost=1e9 / so[0])
            g.add_edge("scaleout", n, kind="nic", gbps=so[0] / 1e9, latency_us=0.0, cost=1e9 / so[0])
    g.graph["links"] = links
    return Topology(g, dom)


def peer_groups(topo: Topology, max_peers: int) -> np.ndarray:
    """Group index of every GPU, (P,). GPUs stay their own group while P - 1 <= max_peers;
    beyond that, contiguous GPUs of one domain are merged so a GPU sees about max_peers peers."""
    P = len(topo.domain)
    if P - 1 <= max_peers:
        return np.arange(P)
    size = -(-P // max_peers)
    grp = np.empty(P, dtype=int)
    nxt = 0
    for k in np.unique(topo.domain):
        members = np.nonzero(topo.domain == k)[0]
        grp[members] = nxt + np.arange(len(members)) // size
        nxt = grp[members].max() + 1
    return grp
