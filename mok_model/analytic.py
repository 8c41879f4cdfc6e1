"""Analytic cost model of one MoE layer pass under the MoK megakernel (vectorized over configs).

Reads like the paper's cost model (mok-system.md section 4), per GPU g:

    latency = launch + schedule + pipeline(g) + ring wraps(g) + reduction + fixed
    pipeline = the longest of four chains:
      compute chain = shared expert and routed GEMM tiles (whole waves or streamed), run on the
                      compute SMs and, once the dispatch ends, on the comm SMs that join them;
                      no minibatch before its rows are in
      comm chain    = M x (dispatch + combine + signals per minibatch) + the last GEMMs
      fabric chain  = the combine's bytes over the links when the GEMM epilogue stores them
      ring chain    = a ring of under two minibatches that must recycle slots: each step waits
                      for gate/up tiles to free them

and the pass ends when the slowest GPU ends. Every knob is an array, so the tuner evaluates
thousands of configurations in one call; the per-GPU dimension stays explicit, so load imbalance
from skewed routing shows as a straggler. Implementation choices that differ between the
published kernel and ours (who stores the combine, whether comm SMs join the compute, how
minibatches are cut, whole-wave tiles) are parameters, with their sources, not code.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .errors import MokInputError
from .gemm_table import gemm_efficiency
from .params import Params
from .scenario import ELEMENT_BYTES, QUANTIZE_BYTES, Config, Scenario
from .workload import traffic

US = 1e-6


@dataclass(frozen=True)
class Loads:
    """Per-GPU row counts that every engine needs, (P,) arrays unless noted."""

    rows: np.ndarray  # routed rows computed on each GPU
    remote_in: np.ndarray  # of those, rows that came from another GPU
    remote_out: np.ndarray  # rows this GPU's tokens send to other GPUs
    dedup_in: np.ndarray  # remote rows received when a token goes once per destination GPU
    dedup_out: np.ndarray
    expert_rows: np.ndarray  # (P, L) rows per local expert
    out_of_domain_in: np.ndarray  # remote rows that cross the scale-out link
    out_of_domain_out: np.ndarray


@lru_cache(maxsize=4096)
def loads(scn: Scenario) -> Loads:
    """Row counts of a scenario, derived from its seeded routing (cached per scenario, arrays
    read-only: a fit over a thousand workloads re-scores each of them at every step)."""
    t = traffic(scn)
    P = scn.ep
    rows_sd = t.rows.sum(axis=2)  # (P, P) source x destination
    eye = np.eye(P, dtype=bool)
    remote = np.where(eye, 0, rows_sd)
    dedup = np.where(eye, 0, t.dedup_rows)
    if scn.domains > 1:
        dom = np.arange(P) // scn.hardware.domain_size
        cross = dom[:, None] != dom[None, :]
    else:
        cross = np.zeros((P, P), bool)
    ld = Loads(rows=t.received(), remote_in=remote.sum(0), remote_out=remote.sum(1),
               dedup_in=dedup.sum(0), dedup_out=dedup.sum(1), expert_rows=t.expert_rows(),
               out_of_domain_in=np.where(cross, rows_sd, 0).sum(0),
               out_of_domain_out=np.where(cross, rows_sd, 0).sum(1))
    for a in vars(ld).values():
        a.flags.writeable = False
    return ld


def fabric_gbps(scn: Scenario, p: Params, remote_rows, cross_rows):
    """Effective fabric bandwidth (bytes/s) for a GPU's remote rows: NVLink, and the slower
    scale-out link for the share of rows that leave the domain."""
    hw = scn.hardware
    bw = hw.link_gbps * 1e9 * p["link_eff"]
    if scn.domains == 1:
        return bw
    share = np.divide(cross_rows, np.maximum(remote_rows, 1))
    slow = hw.scaleout_gbps * 1e9 * p["link_eff"]
    # time = in-domain bytes / bw + cross bytes / slow (both ports run in parallel, take the max)
    return 1.0 / np.maximum((1 - share) / bw, share / slow)


def gemm_time(rows_tiles, n, k, sms, rate_per_sm, tile_m, tile_n, wave_sync: float = 1.0):
    """Time of a GEMM of `rows_tiles` row tiles x ceil(n/tile_n) column tiles on `sms` SMs, each
    tile 2*tile_m*tile_n*k FLOPs. With wave_sync 1 the tiles run in whole waves (tile
    quantization); with 0 they stream into the next GEMM's tiles (a persistent kernel with a
    dynamic work counter), so only the fractional waves count."""
    tiles = rows_tiles * np.ceil(n / tile_n)
    waves = wave_sync * np.ceil(tiles / sms) + (1.0 - wave_sync) * (tiles / sms)
    return waves * (2.0 * tile_m * tile_n * k / rate_per_sm)


def tile_fill_factor(p: Params, rows, row_tiles):
    """A tile's time relative to a full one's, for `rows` valid rows in `row_tiles` row tiles:
    the share gemm_row_share of a tile's time grows with the rows that hold data (the gathered
    activation rows it streams), the rest (the weight tile it streams, the MMA issue) does not.
    1 for full tiles; 1 - gemm_row_share for empty ones."""
    s = p["gemm_row_share"]
    if s == 0.0:
        return 1.0
    cap = np.asarray(row_tiles, dtype=np.float64) * p["gemm_tile_m"]
    fill = np.divide(np.asarray(rows, dtype=np.float64), cap, out=np.ones(np.broadcast(rows, cap).shape),
                     where=cap > 0)
    return 1.0 - s + s * np.minimum(fill, 1.0)


def expert_ffn_time(scn: Scenario, p: Params, rows, row_tiles, experts_touched, sms,
                    width: int, shared: bool = False, wave_sync: float = 1.0,
                    library: bool = False):
    """Routed (or shared) SwiGLU FFN over `rows` rows in `row_tiles` tiles on `sms` SMs.

    Forward: gate/up (H -> 2I) and down (I -> H). Backward: the same shapes for the data
    gradients plus the weight gradients, at bwd_gemm_eff_scale. The result is floored by reading
    the weights of `experts_touched` experts from HBM (and, backward, the weight-gradient traffic).
    `library`: the GEMMs are the library's grouped GEMM (torch._grouped_mm and torch matmul, as
    the unfused baselines run them) at its own efficiencies, torch_gemm_eff and torch_hbm_eff,
    instead of the megakernel's tiles (gemm_eff, sm_scaling, gemm_row_share, hbm_eff).
    """
    t, floor = expert_ffn_parts(scn, p, rows, row_tiles, experts_touched, sms, width, shared,
                                wave_sync, library)
    return np.maximum(t, floor)


def expert_ffn_parts(scn: Scenario, p: Params, rows, row_tiles, experts_touched, sms,
                     width: int, shared: bool = False, wave_sync: float = 1.0,
                     library: bool = False):
    """(tile time, HBM floor) of expert_ffn_time, apart (the simulator streams the floor)."""
    hw, m = scn.hardware, scn.model
    precision = "bf16" if shared else scn.precision  # the shared expert stays BF16 (published)
    wbytes = ELEMENT_BYTES[precision]
    H, I = m.hidden, width
    # the megakernel's GEMMs run at the measured table's efficiency for this shape where the
    # parameters carry one (mok_model/gemm_table.py; it holds the tile fill as measured)
    kernel_eff, measured = (p["torch_gemm_eff"], False) if library else gemm_efficiency(p, scn)
    eff = kernel_eff * (1.0 if scn.pass_ == "fwd" else p["bwd_gemm_eff_scale"])
    hbm_eff = p["torch_hbm_eff"] if library else p["hbm_eff"]
    # per-SM rate; with fewer SMs each one runs faster when sm_scaling < 1 (less HBM and L2
    # contention): the GPU's rate grows as (SMs used)^sm_scaling
    scaling = 1.0 if library else p["sm_scaling"]
    rate = hw.tflops(precision) * 1e12 / hw.sms * eff * (hw.sms / sms) ** (1.0 - scaling)
    tm, tn = p["gemm_tile_m"], p["gemm_tile_n"]
    t = (gemm_time(row_tiles, 2 * I, H, sms, rate, tm, tn, wave_sync)
         + gemm_time(row_tiles, H, I, sms, rate, tm, tn, wave_sync))
    if not library and not measured:
        t = t * tile_fill_factor(p, rows, row_tiles)
    weight_bytes = 3.0 * H * I * wbytes
    if scn.pass_ == "bwd":
        t = 2.0 * t  # data gradients and weight gradients: twice the forward FLOPs
        weight_bytes += 3.0 * H * I * p["wgrad_bytes_per_weight"]  # weight-gradient traffic
    act_bytes = rows * (2 * I) * 2.0 * (1 if scn.pass_ == "fwd" else 3)  # gate/up activations
    floor = (experts_touched * weight_bytes + act_bytes) / (hw.hbm_tbps * 1e12 * hbm_eff)
    return t, floor


def _col(x):
    return np.asarray(x, dtype=np.float64).reshape(-1, 1)


def mok_terms(scn: Scenario, p: Params, dispatch_push, combine_push, minibatch, comm_sms,
              macrobatch, capacity) -> dict[str, np.ndarray]:
    """Critical-path terms (seconds) of the MoK pass for arrays of configs, each shape (C,).

    dispatch_push / combine_push are boolean arrays (False = pull). Infeasible configs (capacity
    overflow) get latency inf. Returns the breakdown terms, their sum `total`, and work totals.
    """
    hw, m, P = scn.hardware, scn.model, scn.ep
    ld = loads(scn)
    mb, cc = _col(minibatch), _col(comm_sms)
    cx = hw.sms - cc
    dpush, kpush = _col(dispatch_push).astype(bool), _col(combine_push).astype(bool)
    rows = ld.rows[None, :].astype(np.float64)  # (1, P)
    H, k = m.hidden, m.top_k
    act = ELEMENT_BYTES[scn.precision] * H  # bytes per dispatched row
    out = 2.0 * H  # combine returns BF16 rows
    if scn.pass_ == "bwd":  # reverse-combine moves BF16 output gradients, reverse-dispatch BF16
        act = out = 2.0 * H

    # --- communication: bytes over min(link, comm SMs x per-SM copy rate) ---
    sm_rate = cc * p["copy_gbps_per_sm"] * 1e9
    link_in = np.asarray(fabric_gbps(scn, p, ld.remote_in, ld.out_of_domain_in))[None, ...]
    link_out = np.asarray(fabric_gbps(scn, p, ld.remote_out, ld.out_of_domain_out))[None, ...]
    r_in, r_out = ld.remote_in[None, :], ld.remote_out[None, :]
    local_rows = rows - r_in
    lat = hw.link_latency_us * US if P > 1 else 0.0
    # a remote read (pull) is a round trip, request out and rows back; a remote write (push) is
    # one way (its acknowledgment is waited for by the completion release below). Emulated peers
    # read local HBM, whose latency is part of the measured copy rate.
    lat_read = lat if hw.emulated_ranks else 2.0 * lat

    def move(bytes_row, my_rows_remote, peer_rows_remote, my_link, peer_link, rate):
        # my comm SMs move my_rows; the other end's port carries peer_rows at link speed
        mine = my_rows_remote * bytes_row / np.minimum(my_link, rate)
        port = peer_rows_remote * bytes_row / peer_link
        return np.maximum(mine, port) + local_rows * bytes_row / rate

    push_rate = sm_rate * p["push_copy_scale"]
    # pull dispatch: the receiver's SMs read its incoming rows; push: the sender's SMs write.
    # push combine: the expert holder writes outputs home; pull: the home reads them.
    # Emulated peers are absent: the one GPU's comm programs act for them, so they move the rows
    # it receives (dispatch) and the outputs it holds (combine) in every mode.
    sender_push = move(act, r_in, r_out, link_in, link_out, push_rate) if hw.emulated_ranks \
        else move(act, r_out, r_in, link_out, link_in, push_rate)
    dispatch = np.where(dpush, sender_push, move(act, r_in, r_out, link_in, link_out, sm_rate))
    home_pull = move(out, r_in, r_out, link_out, link_in, sm_rate) if hw.emulated_ranks \
        else move(out, r_out, r_in, link_in, link_out, sm_rate)
    combine = np.where(kpush, move(out, r_in, r_out, link_out, link_in, push_rate), home_pull)

    # --- minibatches and routed GEMMs on the compute SMs ---
    M = np.maximum(np.ceil(rows / mb), 1.0)
    tm = p["gemm_tile_m"]
    base_tiles = np.ceil(ld.expert_rows / tm).sum(axis=1)[None, :]  # (1, P)
    active = (ld.expert_rows > 0).sum(axis=1)[None, :]
    # a minibatch boundary inside an expert splits one tile, unless minibatches are cut on tile
    # boundaries; it reloads that expert's weights either way
    row_tiles = base_tiles + (1.0 - p["tile_aligned_minibatches"]) * (M - 1)
    touched = active + (M - 1)
    ws = p["wave_sync"]
    ffn = expert_ffn_time(scn, p, rows / M, row_tiles / M, touched / M, cx, m.expert_width, wave_sync=ws)
    c = ffn + p["minibatch_overhead_us"] * US  # per minibatch
    if m.shared_experts:
        n_tok = scn.tokens * m.shared_experts
        shared = expert_ffn_time(scn, p, n_tok, np.ceil(scn.tokens / tm) * m.shared_experts,
                                 m.shared_experts, cx, m.shared_width, shared=True, wave_sync=ws)
    else:
        shared = np.zeros_like(c)

    # --- signalling (mok-system.md 2.1): pull is a local counter; push waits on every peer ---
    # After its rows of a minibatch, a pushing sender releases each of its P-1 receivers in
    # turn (a system-scope release atomic, each waiting for the previous one's acknowledgment:
    # push_signal_per_peer_us apiece, on its comm SMs); a receiver's compute starts when the
    # last flag lands, signal_remote_us later. Every receiver hears from every peer, rows or
    # not, once per minibatch. Pull: the receiver's own comm SMs release a GPU-local counter.
    release = (P - 1) * p["push_signal_per_peer_us"] * US if P > 1 else 0.0
    remote_wait = release + p["signal_remote_us"] * US if P > 1 else 0.0
    sig_dispatch = np.where(dpush, remote_wait, p["signal_local_us"] * US)  # data in -> compute
    sig_after = np.where(dpush, remote_wait - release, p["signal_local_us"] * US)  # after comm SMs
    # comm SMs per minibatch: a push dispatch's releases; a pull combine's polls of the holders
    sig_comm = np.where(dpush, release, 0.0) + np.where(kpush, 0.0, remote_wait)
    # the home learns that its last outputs are in from every peer: pushed with a completion
    # signal, or pulled after polling the holders' readiness (remote in both modes)
    sig_end = np.full_like(sig_comm, remote_wait if P > 1 else p["signal_local_us"] * US)

    # per minibatch: its share of the bytes plus one message latency (peers' messages overlap)
    d = dispatch / M + np.where(dpush, lat, lat_read)
    kk = combine / M + np.where(kpush, lat, lat_read)
    # implementation choices (parameters file): a push combine may store the outputs from the
    # down-projection epilogue (compute SMs, bounded by the fabric only) instead of the comm SMs;
    # comm SMs may join the compute once the dispatch is done (a share of them, fitted) when
    # the combine does not need them.
    epilogue = kpush & (p["combine_in_epilogue"] >= 0.5)
    kk_comm = np.where(epilogue, 0.0, kk)  # combine work left on the comm SMs, per minibatch
    fabric_only = np.maximum(r_in * out / link_out, r_out * out / link_in)
    kf = fabric_only / M + lat
    # comm SMs can only join when they have no combine left to do
    joined = cx + np.where(epilogue, p["comm_join_share"], 0.0) * cc
    c_join = expert_ffn_time(scn, p, rows / M, row_tiles / M, touched / M, joined,
                             m.expert_width, wave_sync=ws) + p["minibatch_overhead_us"] * US
    # minibatches are full but for the last: the first one moves min(minibatch, rows) rows
    full = np.minimum(mb, rows) / np.maximum(rows, 1.0)  # a full minibatch's share of the rows
    d_full, c_full = dispatch * full + np.where(dpush, lat, lat_read), c * M * full
    first = d_full + sig_dispatch
    start = np.maximum(shared, first)
    # comm SMs either interleave each minibatch's pull combine with the next dispatches, or
    # (combine_after_dispatch) finish every dispatch before the first combine copy
    after = p["combine_after_dispatch"] >= 0.5
    dispatch_end = M * (d + sig_comm) + (0.0 if after else (M - 1) * kk_comm)
    # a ring buffer smaller than the routed rows recycles slots as the gate/up tiles (2/3 of the
    # FLOPs) release them: the last rows arrive only after compute has consumed all but a ring's
    # worth, so the dispatch ends late, and comm SMs that would join the compute join late
    backlog = np.maximum(rows - _col(macrobatch), 0.0) / mb  # minibatches' worth held back
    dispatch_end = np.where(backlog > 0,
                            np.maximum(dispatch_end, start + backlog * c_full * (2 / 3) + d_full),
                            dispatch_end)
    # compute is work-conserving: shared and routed tiles (SM-seconds, waves included) run on
    # the compute SMs, joined by comm SMs once the dispatch ends; no minibatch starts before
    # its rows are in, and the last one not before the dispatch ends.
    sm_seconds = (shared + M * c) * cx
    work_time = np.where(sm_seconds <= cx * dispatch_end, sm_seconds / cx,
                         dispatch_end + (sm_seconds - cx * dispatch_end) / joined)
    compute_chain = (np.maximum(np.maximum(work_time, first + M * c_join),
                                dispatch_end + sig_after + c_join) + kk_comm + sig_end)
    # the last minibatch's GEMMs follow its dispatch (on the joined SMs where they join)
    c_last = np.where(epilogue, c_join, c)
    if after:  # combines of the earlier minibatches overlap the last one's GEMMs
        comm_chain = (M * (d + sig_comm) + sig_after + np.maximum((M - 1) * kk_comm, c_last)
                      + kk_comm + sig_end)
    else:
        comm_chain = M * (d + kk_comm) + M * sig_comm + sig_after + c_last + sig_end
    # epilogue stores start once the first minibatch's gate/up (2/3 of its FLOPs) is done
    fabric_chain = np.where(epilogue, start + c * (2 / 3) + M * kf + sig_end, 0.0)
    # a ring of under two minibatches that must recycle: the next minibatch's rows come in as
    # the gate/up tiles (2/3 of the FLOPs) free their slots, so a step lasts the part of gate/up
    # that the refill cannot overlap (ring_refill_overlap) plus the dispatch (and pull combine)
    # work that did not fit in the spare part of the ring
    depth = _col(macrobatch) / mb
    recycled = (rows > _col(macrobatch)) & (depth < 2)
    c_ring = np.where(epilogue, c_join, c)  # comm SMs idle between refills help where they may
    step_comm = d if after else d + kk_comm
    step = np.maximum(c_ring, c_ring * (2 / 3) * (1 - p["ring_refill_overlap"])
                      + step_comm * np.clip(2 - depth, 0.0, 1.0))
    ring_end = start + M * step + ((M - 1) * kk_comm if after else 0.0)
    ring_chain = np.where(recycled, ring_end + kk_comm + sig_end, 0.0)
    pipe = np.maximum(np.maximum(compute_chain, comm_chain), np.maximum(fabric_chain, ring_chain))
    wraps = np.maximum(np.ceil(rows / _col(macrobatch)) - 1, 0)
    ring = wraps * p["ring_wrap_us"] * US
    per_gpu = pipe + ring  # (C, P)

    # --- before and after the megakernel ---
    routes = P * scn.tokens * k
    cap_rows = np.ceil(_col(capacity) * P * scn.tokens * min(k, scn.local_experts))
    worst = P * scn.tokens * min(k, scn.local_experts)  # every token to one GPU: capacity 1.0
    overflow = (cap_rows < min(ld.rows.max() * p["capacity_headroom"], worst)).ravel()
    gather_bytes = (P - 1) * scn.tokens * k * 4.0  # all-gather of top-k ids
    schedule = (p["schedule_us"] * US + routes * p["schedule_ns_per_route"] * 1e-9
                + (gather_bytes / (hw.link_gbps * 1e9 * p["link_eff"]) + lat if P > 1 else 0.0)
                + cap_rows.ravel() * 8.0 / (hw.hbm_tbps * 1e12 * p["hbm_eff"]))
    reduction = scn.tokens * H * 2.0 * (k + 2) / (hw.hbm_tbps * 1e12 * p["hbm_eff"])
    quantize = quantize_time(scn, p)
    launch = p["mok_exposed_launches"] * hw.launch_us * p["host_launch_scale"] * US
    fixed = p["mok_fixed_us"] * US

    C = per_gpu.shape[0]
    rows_ix = np.arange(C)
    slow = np.argmax(per_gpu, axis=1)  # (C,) the straggler ends the pass
    typ = np.argsort(per_gpu, axis=1, kind="stable")[:, P // 2]  # the median GPU
    if hw.emulated_ranks:  # one GPU runs rank 0 of the group: its time is what is measured
        slow = typ = np.zeros(C, dtype=np.int64)

    def at(x, gpu=typ):
        return np.broadcast_to(x, per_gpu.shape)[rows_ix, gpu]

    # critical path of the typical GPU, then the straggler's excess as load_imbalance
    comm_bound = at(comm_chain > compute_chain)  # which chain shapes the critical path
    # what bounds the pass: the busier resource of the median GPU, the fabric (dispatch and
    # combine) or the SMs' GEMMs (the compute chain may be critical only by waiting for rows)
    comm_busier = at(M * (d + kk)) > at(shared + M * c)
    fill = np.where(comm_bound, at(sig_dispatch + c), at(np.maximum(shared, first)))
    drain = np.where(comm_bound, at(sig_end), at(kk_comm + sig_end))
    terms = {
        "launch": np.full(C, launch),
        "schedule": np.broadcast_to(schedule, (C,)).copy(),
        "pipeline_fill": fill,
        "steady_state": at(pipe) - fill - drain,
        "pipeline_drain": drain,
        "ring_buffer": at(ring),
        "load_imbalance": per_gpu[rows_ix, slow] - at(per_gpu),
        "reduction": np.full(C, reduction),
        "quantize": np.full(C, quantize),
        "fixed": np.full(C, fixed),
    }
    total = sum(terms.values())
    if scn.domains > 1:
        # spanning domains is its own term: the same pass with every peer on NVLink gives the
        # other terms; scale_out is what the scale-out link adds to the slowest GPU's time
        one = mok_terms(one_domain(scn), p, dispatch_push, combine_push, minibatch, comm_sms,
                        macrobatch, capacity)
        terms = dict(one["terms"])
        terms["scale_out"] = total - one["finite_total"]
    finite_total = total
    total = np.where(overflow, np.inf, total)
    work = {"dispatch": at(M * d, slow), "combine": at(M * kk, slow),
            "routed_gemm": at(M * ffn, slow), "shared_expert": at(shared, slow),
            "signals": at(M * (sig_dispatch + np.where(kpush, 0.0, remote_wait)) + sig_end, slow)}
    return {"terms": terms, "total": total, "finite_total": finite_total, "work": work,
            "slowest_gpu": slow, "overflow": overflow, "capacity_rows": cap_rows.ravel(),
            "minibatches": at(M, slow), "bound": np.where(comm_busier, "comm", "compute")}


def one_domain(scn: Scenario) -> Scenario:
    """The same scenario with one scale-up domain holding the whole EP group (no scale-out)."""
    return scn.with_(hardware=scn.hardware.with_(domain_size=max(scn.hardware.domain_size, scn.ep)))


def quantize_time(scn: Scenario, p: Params) -> float:
    """Seconds to quantize BF16 rows for FP8/MXFP8 GEMMs (HBM-bound; 0 for BF16): forward, the
    local tokens before the dispatch; backward, the tokens x top_k output-gradient rows a GPU
    computes on (on average). Bytes per element in QUANTIZE_BYTES."""
    rows = scn.tokens * (1 if scn.pass_ == "fwd" else scn.model.top_k)
    hw = scn.hardware
    return rows * scn.model.hidden * QUANTIZE_BYTES[scn.precision] / (hw.hbm_tbps * 1e12 * p["hbm_eff"])


def mok_config_terms(scn: Scenario, p: Params, config: Config) -> dict:
    """mok_terms for one Config (arrays of length 1); a capacity that would overflow is refused."""
    config.check_for(scn)
    r = mok_terms(scn, p, np.array([config.dispatch == "push"]), np.array([config.combine == "push"]),
                  np.array([config.minibatch]), np.array([config.comm_sms]),
                  np.array([config.macrobatch]), np.array([config.capacity]))
    if r["overflow"][0]:
        need = min(float(loads(scn).rows.max()) * p["capacity_headroom"],
                   scn.ep * scn.tokens * min(scn.model.top_k, scn.local_experts))
        least = np.ceil(1000 * need / (scn.ep * scn.tokens * min(scn.model.top_k, scn.local_experts))) / 1000
        raise MokInputError(
            f"--capacity {config.capacity} holds {int(r['capacity_rows'][0])} rows, fewer than the "
            f"busiest GPU's {int(loads(scn).rows.max())} routed rows times the safety headroom "
            f"{p['capacity_headroom']}: the schedule would overflow; use --capacity {least:g} or more")
    return r
