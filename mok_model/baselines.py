"""Analytic models of the baseline systems, each from how that system works.

All of them read the per-expert counts on the host before sizing buffers (a device-to-host sync
in the forward pass), then launch their remaining operations one by one from the host, so a slow
host (Grace) shows up once the GPU runs dry. What differs is how they move rows and what overlaps:

- nccl-torch: count all-to-all, host sync, permute, all_to_all_single, grouped GEMMs on all SMs,
  the shared expert, the reverse all-to-all, unpermute and weighted sum. Nothing overlaps.
- deepep: DeepEP dispatch/combine kernels on `deepep_sms` SMs, one row per destination GPU
  (de-duplicated), half of the SMs sending, each channel handing its rows over in NVLink chunks
  (one release each); the shared expert runs beside the dispatch on the remaining SMs.
- hybridep: as DeepEP, with HybridEP's kernels on `hybridep_sms` SMs, inside Megatron: every SM
  moves rows, the dispatch pushes them and the combine pulls them (COMM_KERNELS).
- comet: tile-level overlap of dispatch with the first GEMM and of the second GEMM with the
  combine on `comet_sms` SMs, at a scheduling overhead `comet_overhead` of the compute.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .analytic import (US, expert_ffn_time, fabric_gbps, loads, one_domain, quantize_time,
                       scale_out_time)
from .params import Params
from .presets import Hardware
from .scenario import ELEMENT_BYTES, Scenario

BASELINES = ("nccl-torch", "deepep", "hybridep", "comet")

# Measured on two real H200s (NV18), fitted by calibration/fit_fabric.py; the records are
# calibration/runs/h200x2/nvlink_micro_full.jsonl and nvlink_micro_quick.jsonl (tests/
# test_comm_kernels.py recomputes both from them). Moved to every other GPU preset with ratio 1.0:
# one SM's copy rate is set by the loads/stores it keeps in flight, not by the link generation,
# and Blackwell SMs run at about Hopper's clock (assumption: not measured on Blackwell).
PUSH_GBPS_PER_SM = 43.91  # push sweep: one copy program (8 warps) writing a peer's HBM
PULL_LINK_SHARE = 0.917  # both directions at once: pulls 330 + 324 GB/s over pushes 361 + 353
# micro-nvlink-signal on the same two H200s: each further slot a writer releases in series (system-
# scope release, then the consumer's poll) adds 0.963 us to the round trip (fit_fabric's slope,
# h200-hgx8.json push_signal_per_peer_us); moved to Blackwell with ratio 1.0 like the push rate
# (assumption: a release waits for its stores' acknowledgment over one switch hop, as on H200).
RELEASE_IN_SERIES_US = 0.963

# DeepEP's recommended configs (deep_ep/buffer.py get_dispatch_config / get_combine_config at
# commit 41cad94, the commit of the GB200 tables; the Torch API takes them when no config is
# given): ranks -> tokens per NVLink chunk (num_max_nvl_chunked_send_tokens) of the dispatch and
# of the combine. Up to 8 ranks the intranode kernels run, above 8 the internode ones (their NVLink
# leg). A rank count the table lacks takes the next listed one up (DeepEP itself refuses it).
DEEPEP_NVL_CHUNK = {2: (24, 10), 4: (6, 9), 8: (6, 4), 16: (36, 4), 24: (8, 1), 32: (32, 1),
                    64: (20, 1), 128: (20, 1), 144: (32, 2), 160: (28, 2)}


@dataclass(frozen=True, slots=True)
class CommKernel:
    """How a baseline's dispatch/combine kernel moves rows over the fabric (design facts)."""

    movers: float  # share of the kernel's SMs that issue fabric traffic
    combine_pulls: bool  # the combine reads its rows from the peers (remote loads)
    gbps_per_mover: float | None  # copy rate of one moving SM; None: the params' copy_gbps_per_sm
    api_buffer_copy: bool  # the Torch API copies the received rows out of (into) a registered buffer
    source: str
    chunked: bool = False  # hands its rows over in NVLink chunks, one tail release per chunk


COMM_KERNELS = {
    "deepep": CommKernel(
        0.5, False, PUSH_GBPS_PER_SM, False,
        "design: DeepEP csrc/kernels/intranode.cu (normal kernels): even blocks send, odd blocks "
        "receive (`is_sender = sm_id % 2 == 0`, one channel per two SMs), in the dispatch and the "
        "combine; senders write rows into the receiver's buffer with plain stores, as the measured "
        "push copy program does; one channel per two SMs hands its rows over in chunks of "
        "DEEPEP_NVL_CHUNK tokens, releasing the ring's tail after each (st_release_sys_global in "
        "intranode.cu and internode.cu)", chunked=True),
    "hybridep": CommKernel(
        1.0, True, None, True,
        "design: DeepEP docs/Hybrid-EP_Implementation.md: every block is a warp-specialized "
        "pipeline (TMA); the dispatch's S2G warp group writes rows to the peers' buffers (push); "
        "in one NVLink domain the combine's G2S warp group loads the peers' expert outputs "
        "(csrc/hybrid_ep/backend/hybrid_ep_backend.cuh, combine_kernel: expert_input_token of "
        "every rank) and reduces them locally (pull); the Torch API's dispatch copies the "
        "received rows out of the registered buffer and its combine copies the expert outputs "
        "into it (section 5, Executor: 'D2D from buffer', 'D2D to buffer'); per-SM TMA rate not "
        "measured: the params' copy_gbps_per_sm"),
    "comet": CommKernel(1.0, False, None, False,
                        "assumption: Comet's comm SMs all push at the params' copy rate"),
}


def copy_gbps(p: Params, system: str, sms: float) -> float:
    """Bytes per second the moving SMs of a baseline's kernel on `sms` SMs can copy."""
    k = COMM_KERNELS[system]
    rate = p["copy_gbps_per_sm"] if k.gbps_per_mover is None else k.gbps_per_mover
    return sms * k.movers * rate * 1e9


def signal_per_peer_s(scn: Scenario, p: Params) -> float:
    """Per-peer cost of an SM-driven exchange: its completion signals to and from the P-1 peers
    go out one after another (HybridEP's device_sync_kernel: every rank adds to one system-scope
    flag on rank 0 and polls it), each a remote release: push_signal_per_peer_us (measured 0.96 us
    per slot on H200, prior 1.2 us on Blackwell), never less than one hop's latency."""
    return max(p["push_signal_per_peer_us"], scn.hardware.link_latency_us) * US


def deepep_chunk_tokens(ep: int, op: str) -> int:
    """Tokens per NVLink chunk of DeepEP's recommended config for `ep` ranks (DEEPEP_NVL_CHUNK)."""
    listed = sorted(DEEPEP_NVL_CHUNK)
    ranks = next((r for r in listed if r >= ep), listed[-1])
    return DEEPEP_NVL_CHUNK[ranks][0 if op == "dispatch" else 1]


def chunk_handover_s(scn: Scenario, rows, sms: float, op: str):
    """Floor of a chunked exchange (DeepEP): each of its sms / 2 channels hands its share of the
    rows (own rows included: they pass through the same buffers) over in chunks of
    deepep_chunk_tokens, one system-scope tail release per chunk, the chunks of a channel in
    series at RELEASE_IN_SERIES_US each. Binds where the chunks are small (one token at 24 and
    32 ranks in the combine); elsewhere the copy or the link is the slower part."""
    channels = max(sms / 2.0, 1.0)
    return rows / (channels * deepep_chunk_tokens(scn.ep, op)) * RELEASE_IN_SERIES_US * US


def _exchange(scn: Scenario, p: Params, bytes_row: float, rows_in, rows_out, sms: float | None,
              eff: float = 1.0, system: str | None = None, op: str = "dispatch", own=0.0):
    """Time to move rows over the fabric: the busier port, plus a cost per peer.

    sms None: NCCL's own channels, limited by eff and by its channels per peer
    (nccl_peers_cap), one link latency per peer. Otherwise the
    `system`'s kernel (COMM_KERNELS) on `sms` SMs: limited by what its moving SMs copy, a pulled
    combine by the share of the link that remote reads reach with traffic both ways
    (PULL_LINK_SHARE), a chunked kernel never faster than its chunk handovers (chunk_handover_s,
    over the busier side's rows plus `own`, the rows a GPU keeps), and signal_per_peer_s per peer."""
    ld = loads(scn)
    link_in = fabric_gbps(scn, p, ld.remote_in, ld.out_of_domain_in) * eff
    link_out = fabric_gbps(scn, p, ld.remote_out, ld.out_of_domain_out) * eff
    per_peer = scn.hardware.link_latency_us * US
    if sms is None:
        cap = nccl_peers_cap(scn, p)
        link_in, link_out = np.minimum(link_in, cap), np.minimum(link_out, cap)
    else:
        kernel = COMM_KERNELS[system or "comet"]
        if op == "combine" and kernel.combine_pulls:
            link_in, link_out = link_in * PULL_LINK_SHARE, link_out * PULL_LINK_SHARE
        cap = copy_gbps(p, system or "comet", sms)
        link_in, link_out = np.minimum(link_in, cap), np.minimum(link_out, cap)
        per_peer = signal_per_peer_s(scn, p)
    t = np.maximum(rows_in * bytes_row / link_in, rows_out * bytes_row / link_out)
    if sms is not None and COMM_KERNELS[system or "comet"].chunked:
        t = np.maximum(t, chunk_handover_s(scn, np.maximum(rows_in, rows_out) + own, sms, op))
    return t + (scn.ep - 1) * per_peer


def nccl_peers_cap(scn: Scenario, p: Params) -> float:
    """Bytes/s NCCL's all-to-all moves for one GPU at most: a send and a receive a peer, each on
    its own few channels (nccl_peer_gbps), so with few peers the channels, not the link, bind
    (at EP 2 one peer's). inf where the peers are emulated in local memory (no channels)."""
    if scn.hardware.emulated_ranks or scn.ep < 2:
        return np.inf
    return nccl_channels_bps(scn.ep - 1, p)


def nccl_channels_bps(peers: int, p: Params) -> float:
    """Bytes/s NCCL's channels move for a GPU exchanging with `peers` peers (nccl_peer_gbps each)."""
    return peers * p["nccl_peer_gbps"] * 1e9


def nccl_alltoall_s(hw: Hardware, p: Params, peers: int, bytes_per_peer: float) -> float:
    """One NCCL all-to-all inside one domain as _exchange charges it, each rank sending
    `bytes_per_peer` to each of `peers` peers: the bytes over the link's NCCL share
    (link_gbps x link_eff x nccl_eff) or its channels (peers x nccl_peer_gbps), whichever is
    lower, plus one link latency a peer. What a micro-nccl-alltoall record times
    (calibration/nvlink_bench.py), fitted by calibration/fit_fabric.py."""
    rate = min(hw.link_gbps * p["link_eff"] * p["nccl_eff"] * 1e9, nccl_channels_bps(peers, p))
    return peers * bytes_per_peer / rate + peers * hw.link_latency_us * US


def api_buffer_copy(scn: Scenario, p: Params, rows, bytes_row: float):
    """HybridEP's Torch API copy of `rows` rows between its registered buffer and a PyTorch
    tensor (read + write in HBM). Not part of baseline_terms: inside Megatron the copy is the
    permute (unpermute) the layer charges as its own term."""
    return 2.0 * rows * bytes_row / (scn.hardware.hbm_tbps * 1e12 * p["hbm_eff"])


def host_ops(scn: Scenario, p: Params, system: str) -> float:
    """Operations the host launches one by one after the count sync (forward), or in the whole
    backward pass: autograd launches each forward operation's backward, and every GEMM's
    backward is two GEMMs (data and weight gradients): two routed ones, plus two for a shared
    expert."""
    ops = {"nccl-torch": p["nccl_ops"], "deepep": p["deepep_ops"], "hybridep": p["hybridep_ops"],
           "comet": p["deepep_ops"]}[system]  # assumption: Comet's host launches as many as DeepEP's
    if scn.pass_ == "bwd":
        ops += 2 + (2 if scn.model.shared_experts else 0)
    return ops


def uses_library_gemm(system: str) -> bool:
    """Whether a baseline's expert GEMMs are the library's grouped GEMM (torch._grouped_mm and
    torch matmul: nccl-torch, mok_kernels/baselines.py LocalExperts, whose GEMMs alone the
    gemm-only records time) rather than tiles like the megakernel's. DeepEP, HybridEP and Comet
    keep the megakernel's GEMM parameters until records of them say otherwise."""
    return system == "nccl-torch"


def host_collectives(scn: Scenario, system: str) -> tuple[int, int]:
    """torch.distributed collective calls the host makes (before the count read, after it), each
    costing nccl_collective_us of host time beyond its launch (counted in host_ops). nccl-torch
    forward (mok_kernels/baselines.py nccl_torch_forward): the count exchange, then the rows, the
    expert ids and the outputs; backward: the gradients of the two row exchanges. The other
    baselines' exchanges are their own kernels, counted in their ops."""
    if system != "nccl-torch":
        return 0, 0
    return (1, 3) if scn.pass_ == "fwd" else (0, 2)


def baseline_terms(scn: Scenario, p: Params, system: str) -> dict:
    """Critical-path terms (seconds) of one baseline pass on its slowest GPU."""
    hw, m, P = scn.hardware, scn.model, scn.ep
    ld = loads(scn)
    fwd = scn.pass_ == "fwd"
    H, k = m.hidden, m.top_k
    act = ELEMENT_BYTES[scn.precision] * H if fwd else 2.0 * H
    out = 2.0 * H
    hbm = hw.hbm_tbps * 1e12 * p["hbm_eff"]
    launch = hw.launch_us * p["host_launch_scale"] * US
    tm = p["gemm_tile_m"]
    rows = ld.rows.astype(np.float64)
    tiles = np.ceil(ld.expert_rows / tm).sum(axis=1)
    active = (ld.expert_rows > 0).sum(axis=1)
    lib = uses_library_gemm(system)

    def ffn(sms):
        return expert_ffn_time(scn, p, rows, tiles, active, sms, m.expert_width,
                               library=lib)

    def shared(sms):
        if not m.shared_experts:
            return np.zeros(P)
        return np.full(P, float(expert_ffn_time(scn, p, scn.tokens, np.ceil(scn.tokens / tm),
                                                 1, sms, m.shared_width, shared=True, library=lib)))

    permute = 2.0 * scn.tokens * k * act / hbm  # gather rows by expert (read + write)
    unpermute = scn.tokens * H * 2.0 * (k + 2) / hbm  # weighted k-way sum
    coll_before, coll_after = host_collectives(scn, system)
    coll = p["nccl_collective_us"] * p["host_launch_scale"] * US  # one collective call's host time
    # the count read waits for the count exchange, whose host call comes first
    sync = ((p["host_sync_us"] * p["host_launch_scale"] * US) if fwd else 0.0) + coll_before * coll

    if system == "nccl-torch":
        disp = _exchange(scn, p, act, ld.remote_in, ld.remote_out, None, p["nccl_eff"])
        comb = _exchange(scn, p, out, ld.remote_out, ld.remote_in, None, p["nccl_eff"])
        gpu = {"permute": permute, "dispatch": disp, "routed_gemm": ffn(hw.sms),
               "shared_expert": shared(hw.sms), "combine": comb, "unpermute": unpermute}
        before = {}
    elif system in ("deepep", "hybridep"):
        sms = p["deepep_sms"] if system == "deepep" else p["hybridep_sms"]
        disp = _exchange(scn, p, act, ld.dedup_in, ld.dedup_out, sms, system=system, own=ld.dedup_own)
        comb = _exchange(scn, p, out, ld.dedup_out, ld.dedup_in, sms, system=system, op="combine",
                         own=ld.dedup_own)
        # the shared expert runs on the SMs the dispatch kernel leaves free
        before = {"dispatch_and_shared": np.maximum(disp, shared(hw.sms - sms))}
        gpu = {"permute": permute, "routed_gemm": ffn(hw.sms), "combine": comb,
               "unpermute": unpermute}
    elif system == "comet":
        sms = p["comet_sms"]
        disp = _exchange(scn, p, act, ld.remote_in, ld.remote_out, sms, system=system)
        comb = _exchange(scn, p, out, ld.remote_out, ld.remote_in, sms, system=system, op="combine")
        g = ffn(hw.sms - sms) * (1 + p["comet_overhead"])
        # gate/up overlaps the dispatch, down overlaps the combine; each GEMM is half of g here
        gpu = {"permute": permute, "dispatch_gemm_overlap": np.maximum(disp, g / 2),
               "gemm_combine_overlap": np.maximum(g / 2, comb), "shared_expert": shared(hw.sms),
               "unpermute": unpermute}
        before = {}
    else:
        raise ValueError(system)

    per_gpu_after = sum(gpu.values())  # (P,)
    per_gpu_before = sum(before.values()) if before else np.zeros(P)
    per_gpu = per_gpu_before + per_gpu_after
    slow = int(np.argmax(per_gpu))
    typ = int(np.argsort(per_gpu, kind="stable")[P // 2])
    terms = {"launch": launch, "schedule": p["schedule_us"] * US}
    terms.update({name: float(np.broadcast_to(v, (P,))[typ]) for name, v in before.items()})
    terms["host_sync"] = sync
    terms.update({name: float(np.broadcast_to(v, (P,))[typ]) for name, v in gpu.items()})
    # after the sync the host launches `ops` operations one by one, an equal share of them for
    # each step of `gpu` in order: a GPU runs a step once the host has launched it and the GPU
    # has done the step before, and its pass ends no earlier than the host's last launch (the
    # simulator's schedule, sim/baselines.py). The pass ends with the last GPU:
    # host_launch_exposed is what the host adds to the slowest GPU's work, never negative, and
    # a GPU that works more never ends sooner
    host = host_ops(scn, p, system) * launch + coll_after * coll
    steps = [np.broadcast_to(v, (P,)) for v in gpu.values()]
    done = np.zeros(P)
    for j, step in enumerate(steps):
        done = np.maximum(done, host * j / len(steps)) + step
    ends = per_gpu_before + np.maximum(done, host)
    terms["host_launch_exposed"] = float(np.max(ends) - per_gpu[slow])
    terms["load_imbalance"] = float(per_gpu[slow] - per_gpu[typ])
    terms["quantize"] = quantize_time(scn, p)  # serial, before the dispatch (0 for BF16)
    if scn.domains > 1:  # spanning domains is its own term, as in analytic.mok_terms
        one = baseline_terms(one_domain(scn), p, system)["terms"]
        extra = scale_out_time(sum(terms.values()), sum(one.values()))
        # a pass on several domains that ends first keeps its own terms (analytic.mok_terms)
        terms = {**terms, "scale_out": 0.0} if extra < 0 else {**one, "scale_out": extra}
    work = {"dispatch": float(np.max(disp)), "combine": float(np.max(comb)),
            "routed_gemm": float(ffn(hw.sms)[slow]), "shared_expert": float(shared(hw.sms)[slow])}
    return {"terms": terms, "total": sum(terms.values()), "work": work, "slowest_gpu": slow}
