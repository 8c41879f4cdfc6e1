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

from dataclasses import dataclass, replace
from functools import lru_cache
from statistics import NormalDist

import numpy as np

from .errors import MokInputError
from .gemm_table import gemm_efficiency, items_period
from .gemm_table import list_period as list_period_of_table
from .params import Params
from .scenario import ELEMENT_BYTES, QUANTIZE_BYTES, Config, Scenario, gluon_padded_width
from .workload import traffic

US = 1e-6
COPY_ROWS = 16  # rows a comm program copies per chunk (mok_kernels/megakernel.py KernelConfig.copy_rows)


@dataclass(frozen=True)
class Loads:
    """Per-GPU row counts that every engine needs, (P,) arrays unless noted."""

    rows: np.ndarray  # routed rows computed on each GPU
    remote_in: np.ndarray  # of those, rows that came from another GPU
    remote_out: np.ndarray  # rows this GPU's tokens send to other GPUs
    dedup_in: np.ndarray  # remote rows received when a token goes once per destination GPU
    dedup_out: np.ndarray
    dedup_own: np.ndarray  # rows a GPU's tokens keep on it, once per token (DeepEP still buffers them)
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
               dedup_in=dedup.sum(0), dedup_out=dedup.sum(1),
               dedup_own=np.diagonal(t.dedup_rows).copy(), expert_rows=t.expert_rows(),
               out_of_domain_in=np.where(cross, rows_sd, 0).sum(0),
               out_of_domain_out=np.where(cross, rows_sd, 0).sum(1))
    for a in vars(ld).values():
        a.flags.writeable = False
    return ld


def link_port_time(r_in, r_out, act: float, out: float, link_in, link_out):
    """Seconds the busier link port of each GPU carries a pass's two exchanges: its ingress the
    `r_in` rows it receives (`act` bytes each) and its `r_out` routed-away rows coming home
    (`out` bytes each), its egress the reverse; `link_in` / `link_out`: the fabric's bytes/s
    for those rows (fabric_gbps)."""
    return np.maximum(r_in * act / link_in + r_out * out / link_out,
                      r_out * act / link_out + r_in * out / link_in)


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


def tile_fill_factor(p: Params, rows, row_tiles, tile_m: float | None = None):
    """A tile's time relative to a full one's, for `rows` valid rows in `row_tiles` row tiles of
    `tile_m` rows (default gemm_tile_m): the share gemm_row_share of a tile's time grows with the
    rows that hold data (the gathered activation rows it streams), the rest (the weight tile it
    streams, the MMA issue) does not. 1 for full tiles; 1 - gemm_row_share for empty ones."""
    s = p["gemm_row_share"]
    if s == 0.0:
        return 1.0
    cap = np.asarray(row_tiles, dtype=np.float64) * (p["gemm_tile_m"] if tile_m is None else tile_m)
    fill = np.divide(np.asarray(rows, dtype=np.float64), cap, out=np.ones(np.broadcast(rows, cap).shape),
                     where=cap > 0)
    return 1.0 - s + s * np.minimum(fill, 1.0)


def fp8_fused(scn: Scenario, p: Params) -> bool:
    """Whether the pass quantizes to FP8 inside the megakernel (fp8_quant_in_copy: forward FP8
    rows quantized while the comm SMs copy them, the shared expert's rows in its own K loop)
    rather than in a pass of their own before the dispatch."""
    return scn.precision == "fp8" and scn.pass_ == "fwd" and p["fp8_quant_in_copy"] >= 0.5


def gluon_fp8(scn: Scenario) -> bool:
    """Whether the pass runs on the Gluon FP8 kernel (Scenario.fp8_kernel "gluon":
    mok_kernels/gluon_fp8/mok.py), whose tiles have their own terms (fp8_gluon_*)."""
    return scn.fp8_kernel == "gluon"


def training_bwd(scn: Scenario) -> bool:
    """Whether the pass is our backward megakernel on the layer's training tiles
    (Scenario.bwd_tiles "training": g and u saved by the forward, so no gate/up is recomputed;
    its tiles' rate bwd_train_eff_scale, relative to the forward's efficiency for the same shape
    (the GEMM table's where the parameters carry one), and per-block weight-gradient time
    bwd_train_wgrad_tile_us in place of bwd_gemm_eff_scale and wgrad_tile_us)."""
    return scn.pass_ == "bwd" and scn.bwd_tiles == "training"


def tile_rows(scn: Scenario, p: Params) -> float:
    """Rows of the megakernel's compute tile for the scenario: fp8_tile_m for FP8
    (fp8_gluon_tile_m on the Gluon kernel), else gemm_tile_m (row tiles per expert are counted
    in these)."""
    if gluon_fp8(scn):
        return p["fp8_gluon_tile_m"]
    return p["fp8_tile_m"] if scn.precision == "fp8" else p["gemm_tile_m"]


def fp8_tile_eff(scn: Scenario, p: Params) -> float:
    """Fraction of the FP8 peak a full FP8 tile of our kernel sustains: fp8_gluon_gemm_eff on the
    Gluon kernel, else fp8_gemm_eff."""
    return p["fp8_gluon_gemm_eff"] if gluon_fp8(scn) else p["fp8_gemm_eff"]


def dispatch_row_bytes(scn: Scenario, p: Params) -> float:
    """Bytes one dispatched route moves: a row at the precision's element size (forward; BF16
    when quantized while copying, since the copy reads BF16 rows), bwd_dispatch_rows BF16 rows
    backward (x and the output gradient in our kernel)."""
    H = scn.model.hidden
    if scn.pass_ == "bwd":
        return 2.0 * H * p["bwd_dispatch_rows"]
    return 2.0 * H if fp8_fused(scn, p) else ELEMENT_BYTES[scn.precision] * H


GLUON_COPY_REF = 32   # comm programs at which fp8_gluon_copy_scale is each one's rate


def dispatch_copy_scale(scn: Scenario, p: Params, comm_sms):
    """A dispatching comm SM's copy rate relative to a plain copy's: when it quantizes the rows
    as it copies them, fp8_quant_copy_scale on the Triton kernel; on the Gluon FP8 kernel
    (mok_kernels/gluon_fp8/mok.py) fp8_gluon_copy_scale x (comm_sms / 32)^(fp8_gluon_copy_exp
    - 1) for `comm_sms` comm programs (a scalar or an array of configs): their summed rate
    grows as their count to fp8_gluon_copy_exp (measured sublinear: 16 -> 48 programs 2.25x
    faster, not 3x); else 1."""
    if not fp8_fused(scn, p):
        return 1.0
    if not gluon_fp8(scn):
        return p["fp8_quant_copy_scale"]
    ratio = np.asarray(comm_sms, dtype=np.float64) / GLUON_COPY_REF
    return p["fp8_gluon_copy_scale"] * ratio ** (p["fp8_gluon_copy_exp"] - 1.0)


def shared_section(scn: Scenario, kernel: bool = True) -> tuple[int, int]:
    """(experts, width) of the shared-expert section the megakernel runs over the N home tokens:
    the model's shared experts; for a model without one, nothing, except in a forward record of
    our megakernel made before 2026-12-01 (scn.zero_shared_slot; `kernel` False: the library's
    GEMMs): that kernel walked a zero shared expert of the routed width over the home tokens."""
    m = scn.model
    if m.shared_experts:
        return m.shared_experts, m.shared_width
    old = kernel and scn.zero_shared_slot and scn.pass_ == "fwd"
    return (1, m.expert_width) if old else (0, 0)


def expert_ffn_time(scn: Scenario, p: Params, rows, row_tiles, experts_touched, sms,
                    width: int, shared: bool = False, wave_sync: float = 1.0,
                    library: bool = False, wgrad_experts=None):
    """Routed (or shared) SwiGLU FFN over `rows` rows in `row_tiles` tiles on `sms` SMs.

    Forward: gate/up (H -> 2I) and down (I -> H). Backward: the same shapes for the data
    gradients (at bwd_gemm_eff_scale), the gate/up again where the kernel recomputes it
    (bwd_recompute), and the weight gradients (wgrad_eff_scale of that rate, plus wgrad_tile_us
    per 128x128 weight-gradient block of every expert touched); on the training tiles
    (training_bwd) no recomputed gate/up, bwd_train_eff_scale and bwd_train_wgrad_tile_us. FP8
    tiles run at fp8_gemm_eff of the FP8 peak plus their scale FFMAs (fp8_scale_cost). The result
    is floored by reading the weights of `experts_touched` experts from HBM (and, backward, the
    weight-gradient traffic).
    `library`: the GEMMs are the library's grouped GEMM (torch._grouped_mm and torch matmul, as
    the unfused baselines run them) at its own efficiencies, torch_gemm_eff and torch_hbm_eff,
    instead of the megakernel's tiles (gemm_eff, sm_scaling, gemm_row_share, the weight stream
    of weight_stream_bps); its backward is two GEMMs per forward GEMM. `wgrad_experts`: the
    experts whose weight gradients the rows complete (default experts_touched; a minibatch
    boundary inside an expert splits its rows, not its weight-gradient blocks).
    """
    t, floor = expert_ffn_parts(scn, p, rows, row_tiles, experts_touched, sms, width, shared,
                                wave_sync, library, wgrad_experts)
    return np.maximum(t, floor)


def ffn_pieces(scn: Scenario, p: Params, rows, row_tiles, experts_touched, sms, width: int,
               shared: bool = False, wave_sync: float = 1.0, library: bool = False,
               wgrad_experts=None) -> dict:
    """Tile seconds of the FFN's parts: forward {"gate_up", "down"}; backward {"gate_up"
    (recomputed, 0 without bwd_recompute), "dgrad" (dA and dX: the forward's shapes), "wgrad"
    (weight gradients: FLOPs and per-block latency)}. expert_ffn_parts sums them; the simulator
    splits a minibatch's GEMMs by them."""
    pieces, fill = _pieces(scn, p, rows, row_tiles, experts_touched, sms, width, shared, wave_sync,
                           library, wgrad_experts)
    return {k: v * fill for k, v in pieces.items()}


def _pieces(scn: Scenario, p: Params, rows, row_tiles, experts_touched, sms, width: int,
            shared: bool, wave_sync: float, library: bool, wgrad_experts=None):
    """ffn_pieces before the tile fill factor, and that factor (applied to their sum)."""
    hw, m = scn.hardware, scn.model
    fused = fp8_fused(scn, p) and not library
    # the shared expert stays BF16 (published) unless our kernel runs it in FP8 (fused)
    precision = "bf16" if shared and not fused else scn.precision
    # the Gluon FP8 kernel computes I zero-padded to whole 128-column blocks
    H, I = m.hidden, (gluon_padded_width(width) if gluon_fp8(scn) and not library else width)
    measured = False  # whether a measured GEMM table gives the efficiency (mok_model/gemm_table.py)
    training = training_bwd(scn) and not library
    if library:
        eff = p["torch_gemm_eff"]
    elif precision == "fp8":
        eff = fp8_tile_eff(scn, p)
    elif training:  # the training tiles: the forward's efficiency for this shape, scaled below
        eff, measured = gemm_efficiency(p, replace(scn, pass_="fwd", bwd_tiles="recompute"), sms)
    else:  # the table's efficiency for this shape where the parameters carry one, else gemm_eff
        eff, measured = gemm_efficiency(p, scn, sms)
    if scn.pass_ == "bwd":
        eff = eff * p["bwd_train_eff_scale" if training else "bwd_gemm_eff_scale"]
    # per-SM rate; with fewer SMs each one runs faster when sm_scaling < 1 (less HBM and L2
    # contention): the GPU's rate grows as (SMs used)^sm_scaling
    scaling = 1.0 if library else p["sm_scaling"]
    rate = hw.tflops(precision) * 1e12 / hw.sms * eff * (hw.sms / sms) ** (1.0 - scaling)
    tm = p["gemm_tile_m"] if library else tile_rows(scn, p)
    tn = p["gemm_tile_n"]
    gu = gemm_time(row_tiles, 2 * I, H, sms, rate, tm, tn, wave_sync)
    dn = gemm_time(row_tiles, H, I, sms, rate, tm, tn, wave_sync)
    # a measured table holds the tile fill as measured
    fill = 1.0 if library or measured else tile_fill_factor(p, rows, row_tiles, tm)
    if precision == "fp8" and not library:
        # the scale FFMAs after each 128-wide K block wait for the MMA: their time, relative to
        # the MMA's at the peak rate, is added to the tiles'
        # (fp8_gluon_scale_cost on the Gluon kernel)
        c = p["fp8_gluon_scale_cost"] if gluon_fp8(scn) else p["fp8_scale_cost"]
        gu, dn = gu * (1.0 + c * eff), dn * (1.0 + c * eff)
    if scn.pass_ == "fwd":
        return {"gate_up": gu, "down": dn}, fill
    if library:  # autograd: two GEMMs per forward GEMM
        return {"gate_up": 0.0 * gu, "dgrad": gu + dn, "wgrad": gu + dn}, fill
    # weight gradients: the forward's FLOPs over the same rows at wgrad_eff_scale of the rate,
    # plus a fixed time per 128 x 128 block of every expert's weight gradients (the reduction
    # over the expert's rows fills and drains its pipeline and waits for the rows' tiles)
    # (the training tiles: their own per-block time, and g and u read as the forward saved them)
    experts = experts_touched if wgrad_experts is None else wgrad_experts
    blocks = experts * np.ceil(H / 128) * np.ceil(3 * I / 128)
    block_us = p["bwd_train_wgrad_tile_us" if training else "wgrad_tile_us"]
    wgrad = ((gu + dn) / p["wgrad_eff_scale"]
             + blocks * block_us * US / sms / np.maximum(fill, 1e-12))  # unfilled
    recompute = 0.0 if training else p["bwd_recompute"]
    return {"gate_up": recompute * gu, "dgrad": gu + dn, "wgrad": wgrad}, fill


def expert_ffn_parts(scn: Scenario, p: Params, rows, row_tiles, experts_touched, sms,
                     width: int, shared: bool = False, wave_sync: float = 1.0,
                     library: bool = False, wgrad_experts=None):
    """(tile time, HBM floor) of expert_ffn_time, apart (the simulator streams the floor)."""
    m = scn.model
    fused = fp8_fused(scn, p) and not library
    precision = "bf16" if shared and not fused else scn.precision
    wbytes = ELEMENT_BYTES[precision]
    H, I = m.hidden, width
    pieces, fill = _pieces(scn, p, rows, row_tiles, experts_touched, sms, width, shared, wave_sync,
                           library, wgrad_experts)
    t = sum(pieces.values()) * fill
    weight_bytes = 3.0 * H * I * wbytes
    if scn.pass_ == "bwd":  # weight-gradient traffic; the training tiles store each gradient once,
        # in the parameters' bf16 (w_direct, w_bf16: mok_kernels/backward.py), nothing read back
        per_weight = (ELEMENT_BYTES["bf16"] if training_bwd(scn) and not library
                      else p["wgrad_bytes_per_weight"])
        weight_bytes += 3.0 * H * I * per_weight
    act_bytes = rows * (2 * I) * 2.0 * (1 if scn.pass_ == "fwd" else 3)  # gate/up activations
    floor = (experts_touched * weight_bytes + act_bytes) / weight_stream_bps(scn, p, library)
    return t, floor


def weight_stream_bps(scn: Scenario, p: Params, library: bool = False) -> float:
    """Bytes per second at which a pass's GEMMs stream expert weights from HBM: the library's
    torch_hbm_eff of the spec; the megakernel's, the phase mechanism's hbm_gbps where a measured
    GEMM table (mok_model/gemm_table.py) covers the scenario (its own GEMM phases measured it),
    else hbm_eff of the spec (fitted on the epilogue reduction); the Gluon FP8 kernel's at
    fp8_gluon_stream_scale of that."""
    hw = scn.hardware
    if library:
        return hw.hbm_tbps * 1e12 * p["torch_hbm_eff"]
    scale = p["fp8_gluon_stream_scale"] if gluon_fp8(scn) else 1.0
    t = p.gemm_table
    if t is not None and t.level == "absolute" and t.mechanism_covers(scn):
        return t.lookup["hbm_gbps"] * 1e9 * scale
    return hw.hbm_tbps * 1e12 * p["hbm_eff"] * scale


def _col(x):
    return np.asarray(x, dtype=np.float64).reshape(-1, 1)


def mok_terms(scn: Scenario, p: Params, dispatch_push, combine_push, minibatch, comm_sms,
              macrobatch, capacity, list_lag=None, totals_only: bool = False) -> dict[str, np.ndarray]:
    """Critical-path terms (seconds) of the MoK pass for arrays of configs, each shape (C,).

    dispatch_push / combine_push are boolean arrays (False = pull). `list_lag`: the kernel's
    work-list lag of each config, where they differ (the tuner scores several at once); None:
    scn.list_lag. Infeasible configs (capacity overflow) get latency inf. Returns the breakdown
    terms, their sum `total`, and work totals; `totals_only` (the tuner's question): only
    `total` and `overflow`, the same bits, without the labels and work totals.
    """
    hw, m, P = scn.hardware, scn.model, scn.ep
    ld = every = loads(scn)
    if hw.emulated_ranks:
        # one GPU runs rank 0 of the group and only its time is measured (slow, typ below): the
        # other ranks' columns are not computed
        ld = Loads(**{name: a[:1] for name, a in vars(every).items()})
    mb, cc = _col(minibatch), _col(comm_sms)
    lag = scn.list_lag if list_lag is None else _col(list_lag)
    cx = hw.sms - cc
    dpush, kpush = _col(dispatch_push).astype(bool), _col(combine_push).astype(bool)
    rows = ld.rows[None, :].astype(np.float64)  # (1, P)
    H, k = m.hidden, m.top_k
    act = dispatch_row_bytes(scn, p)  # bytes per dispatched route
    out = 2.0 * H  # combine returns BF16 rows (backward: the dX rows pushed home)

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

    # today's pull copies load their indices ahead; push lanes (and every copy of a record of
    # the old loop) wait for them a chunk at a time (copy_load)
    pull_sm = sm_rate / copy_load(scn, p, pull=True)
    push_rate = sm_rate / copy_load(scn, p, pull=False) * p["push_copy_scale"]
    q = dispatch_copy_scale(scn, p, cc)  # comm SMs that quantize while they copy copy slower
    # pull dispatch: the receiver's SMs read its incoming rows; push: the sender's SMs write.
    # push combine: the expert holder writes outputs home; pull: the home reads them.
    # Emulated peers are absent: the one GPU's comm programs act for them, so they move the rows
    # it receives (dispatch) and the outputs it holds (combine) in every mode.
    M, row_tiles = minibatch_tiles(scn, p, ld, mb)   # minibatches and their routed row tiles
    # Chunk scans are comm-SM time: push lanes visit every chunk (or, copying runs, every row
    # tile) of the receiver's minibatch for their own rows (push_scan), our pull combine's homes
    # every chunk of each owner's minibatches (pull_scan_chunks). They slow the comm SMs' copy
    # (as the simulator loads its comm SMs), which binds where the SMs, not the link, bound it.
    scan_s = push_scan(scn, p, rows, row_tiles, M, cc)
    push_rate_scan = q * push_rate / (1.0 + scan_s * q * push_rate / np.maximum(rows * act, 1.0))
    sender_push = move(act, r_in, r_out, link_in, link_out, push_rate_scan) if hw.emulated_ranks \
        else move(act, r_out, r_in, link_out, link_in, push_rate_scan)
    dispatch = np.where(dpush, sender_push, move(act, r_in, r_out, link_in, link_out, q * pull_sm))
    scan_home = (pull_scan_chunks(scn, p, M, cc) * scan_chunk_s(scn, p)).sum(axis=1, keepdims=True)
    pull_rate = pull_sm / (1.0 + scan_home * pull_sm / np.maximum((r_out + local_rows) * out, 1.0))
    home_pull = move(out, r_in, r_out, link_out, link_in, pull_sm) if hw.emulated_ranks \
        else move(out, r_out, r_in, link_in, link_out, pull_rate)
    combine = np.where(kpush, move(out, r_in, r_out, link_out, link_in, push_rate), home_pull)

    # --- minibatches (M, row_tiles: above) and routed GEMMs on the compute SMs ---
    tm = tile_rows(scn, p)
    active = (ld.expert_rows > 0).sum(axis=1)[None, :]
    # a minibatch boundary inside an expert reloads that expert's weights; the kernel cuts
    # minibatches on tile boundaries, so only some boundaries fall inside an expert
    touched = active + (M - 1) * boundary_split_share(ld.expert_rows, tm)[None, :]
    ws = p["wave_sync"]
    ffn = expert_ffn_time(scn, p, rows / M, row_tiles / M, touched / M, cx, m.expert_width, wave_sync=ws,
                          wgrad_experts=active / M)
    # per minibatch: the tiles' time, or the period the in-order work list holds the SMs for
    lp = list_period(scn, p, row_tiles / M, cx, lag)
    held = np.maximum(ffn, lp)
    c = held + p["minibatch_overhead_us"] * US
    ns, sw = shared_section(scn)
    if ns:
        n_tok = scn.tokens * ns
        shared = expert_ffn_time(scn, p, n_tok, np.ceil(scn.tokens / tm) * ns, ns, cx, sw,
                                 shared=True, wave_sync=ws)
    else:
        shared = np.zeros_like(c)
    # the comm SMs copy slower while the compute SMs run GEMMs beside them (copy_beside_gemm):
    # their copying (a push combine stored from the epilogue is not theirs) stretches
    on_comm = dispatch + np.where(kpush & (p["combine_in_epilogue"] >= 0.5), 0.0, combine)
    stretch = copy_beside_gemm(on_comm, shared + M * c, p["copy_slowdown_beside_gemm"])
    dispatch, combine = dispatch * stretch, combine * stretch

    # --- signalling (mok-system.md 2.1): pull is a local counter; push waits on every peer ---
    # After its rows of a minibatch, a pushing sender releases its receivers (push_release:
    # in turn, or spread over its comm programs), on its comm SMs; a receiver's compute starts
    # when the last flag lands, signal_remote_us later. Every receiver hears from every peer,
    # rows or not, once per minibatch. Pull: the receiver's own comm SMs release a GPU-local
    # counter. A pull combine's home polls each holder's flag in turn (remote_wait).
    release, remote_wait, sig_dispatch, sig_after, sig_comm = minibatch_signals(P, p, cc, dpush,
                                                                                kpush)
    # the home learns that its last outputs are in from every peer: pushed with a completion
    # signal, or pulled after polling the holders' readiness (remote in both modes)
    sig_end = np.full_like(sig_comm, remote_wait if P > 1 else p["signal_local_us"] * US)
    lanes = p["push_release_lanes"] >= 0.5

    def with_signals(copy):
        """The end of M minibatches' copies (`copy` apiece) and their signals: our kernel's
        comm programs signal between their copies (push_release_lanes 1), so the two add up;
        one writer signals beside the copying programs, one minibatch after another as each
        one's rows are in, so the longer of the two chains ends them."""
        if lanes:
            return M * (copy + sig_comm)
        return np.maximum(M * copy + sig_comm, copy + M * sig_comm)

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
    # what a GPU's comm SMs still copy after its last down-projection: one minibatch of pull
    # combine, or, where homes walk the owners in rank order (combine_owner_order), the last
    # minibatch of the first owner and then every row of the later owners (pull_combine_tail)
    tail = np.where(epilogue, 0.0, np.where(kpush, kk, pull_combine_tail(
        scn, p, kk, M, out, pull_rate, link_in, lat_read)))
    # the work list's lag L (scn.list_lag) leaves the down items of the last min(L + 1, M)
    # minibatches, not two, after the last gate/up items: each one past two adds the combine
    # the comm SMs copy for it beyond its down items' time (a third of the joined SMs' step)
    lagged = np.maximum(np.minimum(lag + 1.0, M) - 2.0, 0.0)
    # comm SMs can only join when they have no combine left to do
    joined = joined_sms(p, kpush, cc, cx)
    lp_join = list_period(scn, p, row_tiles / M, joined, lag)
    c_join = np.maximum(expert_ffn_time(scn, p, rows / M, row_tiles / M, touched / M, joined,
                                        m.expert_width, wave_sync=ws, wgrad_experts=active / M),
                        lp_join) + p["minibatch_overhead_us"] * US
    tail = tail + lagged * np.maximum(kk_comm - c_join / 3, 0.0)
    # minibatches are full but for the last: the first one moves min(minibatch, rows) rows
    full = np.minimum(mb, rows) / np.maximum(rows, 1.0)  # a full minibatch's share of the rows
    d_full, c_full = dispatch * full + np.where(dpush, lat, lat_read), c * M * full
    # every GPU starts with its minibatch 0, whose rows come from the same first sources of each
    # expert (rows sorted by expert, then source): their links out carry every receiver's
    # minibatch 0 at once (source_hotspot), so the first rows are in no earlier than that
    hot = source_hotspot(scn, p, mb, link_out) + np.where(dpush, lat, lat_read)
    first = np.maximum(d_full, hot) + sig_dispatch
    start = np.maximum(shared, first)
    # comm SMs either interleave each minibatch's pull combine with the next dispatches, or
    # (combine_after_dispatch) finish every dispatch before the first combine copy
    after = p["combine_after_dispatch"] >= 0.5
    dispatch_end = with_signals(d) + (0.0 if after else (M - 1) * kk_comm)
    # a ring buffer smaller than an iteration's routed rows recycles slots: before writing rows
    # past the ring, the comm SMs wait until the gate/up tiles (2/3 of the FLOPs) of the
    # minibatches holding the rows they overwrite are done (mok_kernels/megakernel.py waits for
    # each such minibatch's whole gate/up counter; ring_refill_overlap is the share of that
    # gate/up a refill may overlap, 0 for our kernel). The last rows arrive only then, so the
    # dispatch ends late, and comm SMs that would join the compute join late.
    ring_rows = ring_capacity(p, macrobatch, minibatch, scn)
    it_rows = iteration_rows(scn, ld)[None, :]
    over = np.maximum(it_rows - ring_rows, 0.0) / mb  # minibatches' worth past the ring
    waited = np.ceil(over)  # whole minibatches whose slots are overwritten
    part = over - (waited - 1.0)  # share of the last of them that must be free
    o = p["ring_refill_overlap"]
    freed = start + (waited - 1.0) * c_full + c_full * (2 / 3) * (1.0 - o * (1.0 - part))
    dispatch_end = np.where(over > 0, np.maximum(dispatch_end, freed + d_full), dispatch_end)
    # compute is work-conserving: the shared and routed tiles run on the compute SMs, joined by
    # comm SMs once the dispatch ends (mok_kernels/megakernel.py: they take items from the
    # same work counter). The joined SMs help only with the work that remains then: the share
    # of the tiles the compute SMs have not done by the dispatch end runs at the joined SMs'
    # rate (tile time on more SMs, sublinear by sm_scaling, floored by the weight reads), as
    # sim/mok.py's GEMMs do. No minibatch starts before its rows are in, and the last one not
    # before the dispatch ends.
    alone = shared + M * c  # all the tiles on the compute SMs
    if ns:
        shared_join = expert_ffn_time(scn, p, n_tok, np.ceil(scn.tokens / tm) * ns, ns, joined,
                                      sw, shared=True, wave_sync=ws)
    else:
        shared_join = np.zeros_like(c_join)
    together = shared_join + M * c_join  # all of them on the joined SMs
    work_time = np.where(alone <= dispatch_end, alone,
                         dispatch_end + (1.0 - dispatch_end / alone) * together)
    # the kernel's work list is walked in order (in_order_wait): where a minibatch's gate/up
    # items fill every compute SM, the down items behind it wait for its rows too, so the
    # shared expert's down follows minibatch 0's rows and the previous minibatch's down (1/3
    # of its FLOPs) follows the last rows
    io = in_order_wait(scn, p, row_tiles / M, cx)
    # the shared expert's tiles, like the routed ones, run on the joined SMs once the dispatch
    # ends (sim/mok.py _gemm: the remaining share at the joined rate)
    shared_t = np.where(shared <= dispatch_end, shared,
                        dispatch_end + (1.0 - dispatch_end / np.maximum(shared, 1e-30)) * shared_join)
    gate0 = np.where(io, np.maximum(first, shared_t * (2 / 3)) + shared_t / 3, first)
    prev_dn = np.where(io & (M > 1), c_join / 3, 0.0)
    compute_chain = (np.maximum(np.maximum(work_time, gate0 + M * c_join),
                                dispatch_end + sig_after + c_join + prev_dn) + tail + sig_end)
    # our kernel's push lanes copy their pair's rows only (push_lane_chain): where a minibatch's
    # rows come from few senders it is in when those senders' lanes are done, the others idle
    lane_row_s = act * cc / np.maximum(push_rate_scan, 1e-30) * stretch
    lane = push_lane_chain(scn, p, mb, cc, dpush, lane_row_s, M * c_join)
    compute_chain = np.maximum(compute_chain, np.where(lane > 0, lane + lat + sig_after + tail
                                                       + sig_end, 0.0))
    # the last minibatch's GEMMs follow its dispatch (on the joined SMs where they join), with
    # the previous minibatch's down where the list waits
    c_last = np.where(epilogue, c_join, c)
    c_last = c_last + np.where(io & (M > 1), c_last / 3, 0.0)
    if after:  # combines of the earlier minibatches overlap the last one's GEMMs
        comm_chain = (with_signals(d) + sig_after + np.maximum((M - 1) * kk_comm, c_last)
                      + kk_comm + sig_end)
    else:
        comm_chain = with_signals(d + kk_comm) + sig_after + c_last + sig_end
    # epilogue stores start once the first minibatch's gate/up (2/3 of its FLOPs) is done, on
    # the joined SMs once the dispatch has ended (the shared expert's tiles too: shared_t)
    first_gu = np.where(dispatch_end <= np.maximum(shared_t, first), c_join, c) * (2 / 3)
    fabric_chain = np.where(epilogue, np.maximum(shared_t, first) + first_gu + M * kf + sig_end, 0.0)
    # a ring of under two minibatches that must recycle: the next minibatch's rows come in as
    # the gate/up tiles (2/3 of the FLOPs) free their slots, so a step lasts the part of gate/up
    # that the refill cannot overlap (ring_refill_overlap) plus the dispatch (and pull combine)
    # work that did not fit in the spare part of the ring
    depth = ring_rows / mb
    recycled = (over > 0) & (depth < 2)
    c_ring = np.where(epilogue, c_join, c)  # comm SMs idle between refills help where they may
    step_comm = d if after else d + kk_comm
    step = np.maximum(c_ring, c_ring * (2 / 3) * (1 - p["ring_refill_overlap"])
                      + step_comm * np.clip(2 - depth, 0.0, 1.0))
    ring_end = start + M * step + ((M - 1) * kk_comm if after else 0.0)
    ring_chain = np.where(recycled, ring_end + tail + sig_end, 0.0)
    pipe = np.maximum(np.maximum(compute_chain, comm_chain), np.maximum(fabric_chain, ring_chain))
    # a GPU's link ports carry both exchanges at once: its ingress the rows it receives
    # (dispatch) and its own tokens' outputs coming home (combine), its egress the reverse. The
    # chains above each put one exchange on the links; no schedule ends before the busier port
    # has carried both. Ranks emulated on one GPU have no link (their peers are in local HBM).
    port = np.zeros_like(pipe)
    if not hw.emulated_ranks and P > 1:
        port = np.broadcast_to(link_port_time(r_in, r_out, act, out, link_in, link_out), pipe.shape)
        pipe = np.maximum(pipe, lat + port + sig_end)
    wraps = np.maximum(np.ceil(it_rows / ring_rows) - 1, 0)
    ring = wraps * p["ring_wrap_us"] * US
    per_gpu = pipe + ring  # (C, P)

    # --- before and after the megakernel ---
    routes = P * scn.tokens * k
    cap_rows = np.ceil(_col(capacity) * P * scn.tokens * min(k, scn.local_experts))
    worst = P * scn.tokens * min(k, scn.local_experts)  # every token to one GPU: capacity 1.0
    overflow = (cap_rows < min(every.rows.max() * p["capacity_headroom"], worst)).ravel()
    gather_bytes = (P - 1) * scn.tokens * k * 4.0  # all-gather of top-k ids
    schedule = (p["schedule_us"] * US + routes * p["schedule_ns_per_route"] * 1e-9
                + (gather_bytes / (hw.link_gbps * 1e9 * p["link_eff"]) + lat if P > 1 else 0.0)
                + cap_rows.ravel() * 8.0 / (hw.hbm_tbps * 1e12 * p["hbm_eff"]))
    reduction = scn.tokens * H * 2.0 * (k + 2) / (hw.hbm_tbps * 1e12 * p["hbm_eff"])
    quantize = quantize_time(scn, p)
    launch = p["mok_exposed_launches"] * hw.launch_us * p["host_launch_scale"] * US
    fixed = (p["mok_fixed_us"] + (p["fp8_gluon_fixed_us"] if gluon_fp8(scn) else 0.0)
             + push_pass(scn, p) * dpush.ravel()) * US

    C = per_gpu.shape[0]
    rows_ix = np.arange(C)
    if hw.emulated_ranks:  # one GPU runs rank 0 of the group: its time is what is measured
        slow = typ = np.zeros(C, dtype=np.int64)
    else:
        slow = np.argmax(per_gpu, axis=1)  # (C,) the straggler ends the pass
        typ = np.argsort(per_gpu, axis=1, kind="stable")[:, P // 2]  # the median GPU

    def at(x, gpu=typ):
        return np.broadcast_to(x, per_gpu.shape)[rows_ix, gpu]

    # critical path of the typical GPU, then the straggler's excess as load_imbalance
    comm_bound = at(comm_chain > compute_chain)  # which chain shapes the critical path
    fill = np.where(comm_bound, at(sig_dispatch + c), at(np.maximum(shared, first)))
    drain = np.where(comm_bound, at(sig_end), at(tail + sig_end))
    # the fill costs minibatch 0's GEMMs on the compute SMs alone; where the comm SMs join and
    # shorten the pass below it (nearly every SM a comm SM), it is what the pass holds
    fill = np.minimum(fill, np.maximum(at(pipe) - drain, 0.0))
    steady = at(pipe) - fill - drain  # where fill is pipe - drain, a rounding error reads 0
    steady = np.where((steady < 0) & (steady > -1e-9 * at(pipe)), 0.0, steady)
    terms = {
        "launch": np.full(C, launch),
        "schedule": np.broadcast_to(schedule, (C,)).copy(),
        "pipeline_fill": fill,
        "steady_state": steady,
        "pipeline_drain": drain,
        "ring_buffer": at(ring),
        "load_imbalance": per_gpu[rows_ix, slow] - at(per_gpu),
        "reduction": np.full(C, reduction),
        "quantize": np.full(C, quantize),
        "fixed": np.broadcast_to(fixed, (C,)).copy(),
    }
    total = sum(terms.values())
    if totals_only:
        return {"total": np.where(overflow, np.inf, total), "overflow": overflow}
    if scn.domains > 1:
        # spanning domains is its own term: the same pass with every peer on NVLink gives the
        # other terms; scale_out is what the scale-out link adds to the slowest GPU's time
        one = mok_terms(one_domain(scn), p, dispatch_push, combine_push, minibatch, comm_sms,
                        macrobatch, capacity, list_lag)
        extra = np.asarray(scale_out_time(total, one["finite_total"]))
        # where the pass on several domains ends first (a scale-out link faster than NVLink),
        # the domains add nothing: its own terms, which add up to its latency, and scale_out 0
        # (as sim/engine.py)
        first = extra < 0
        terms = {k: np.where(first, terms[k], v) for k, v in one["terms"].items()}
        terms["scale_out"] = np.where(first, 0.0, extra)
    finite_total = total
    total = np.where(overflow, np.inf, total)
    # what bounds the pass: the median GPU's busiest resource, its compute SMs' GEMMs, its comm
    # SMs' copies or its link ports (both exchanges), as the simulator names it (sim/engine.py);
    # the compute chain may be critical only by waiting for rows
    limiter = np.array(["compute SMs", "comm SMs", "links"])[np.argmax(np.stack(
        [at(shared + M * c), at(M * (d + kk_comm)), at(port)]), axis=0)]
    work = {"dispatch": at(M * d, slow), "combine": at(M * kk, slow),
            "routed_gemm": at(M * held, slow), "list_hold": at(M * (held - ffn), slow),
            "shared_expert": at(shared, slow),
            "signals": at(M * (sig_dispatch + np.where(kpush, 0.0, remote_wait)) + sig_end, slow)}
    return {"terms": terms, "total": total, "finite_total": finite_total, "work": work,
            "slowest_gpu": slow, "overflow": overflow, "capacity_rows": cap_rows.ravel(),
            "minibatches": at(M, slow), "limiter": limiter,
            "bound": np.where(limiter == "compute SMs", "compute", "comm")}


def push_release(P: int, p: Params, comm_sms) -> np.ndarray:
    """Seconds a pushing GPU's comm SMs spend releasing its receivers per minibatch (each
    release a system-scope atomic that waits for the previous one's acknowledgment,
    push_signal_per_peer_us). push_release_lanes 0: one writer releases the P - 1 receivers in
    turn (the published description); 1: each comm program releases the receivers it copied
    for, ceil(P / comm SMs) apiece (mok_kernels/megakernel.py's push lanes). Shape of comm_sms."""
    cc = np.asarray(comm_sms, dtype=np.float64)
    if P < 2:
        return np.zeros_like(cc)
    turns = np.where(p["push_release_lanes"] >= 0.5, np.ceil(P / np.maximum(cc, 1.0)), P - 1.0)
    return turns * p["push_signal_per_peer_us"] * US


def minibatch_signals(P: int, p: Params, comm_sms, dispatch_push, combine_push):
    """A minibatch's signalling seconds, as both engines charge them: (release: a push
    dispatch's releases, push_release; remote_wait: flags heard from every peer in turn,
    polls_wait; sig_dispatch: rows in -> compute; sig_after: the signal after the comm SMs;
    sig_comm: the comm SMs' share, a push dispatch's releases and a pull combine's polls)."""
    release = push_release(P, p, comm_sms)
    remote_wait = polls_wait(P, p)
    remote = p["signal_remote_us"] * US if P > 1 else 0.0
    local = p["signal_local_us"] * US
    sig_dispatch = np.where(dispatch_push, release + remote, local)
    sig_after = np.where(dispatch_push, remote, local)
    sig_comm = np.where(dispatch_push, release, 0.0) + np.where(combine_push, 0.0, remote_wait)
    return release, remote_wait, sig_dispatch, sig_after, sig_comm


def polls_wait(P: int, p: Params) -> float:
    """Seconds until a GPU has seen a flag from every peer, polled (or released) one peer
    after another: a pull combine's polls of the holders per minibatch, a push combine's
    completion signals at the end of the pass (0 on one GPU)."""
    if P < 2:
        return 0.0
    return ((P - 1) * p["push_signal_per_peer_us"] + p["signal_remote_us"]) * US


def copy_beside_gemm(copy, gemm, slowdown: float):
    """The factor (>= 1) on the comm SMs' copy time when GEMMs run beside it on the same GPU:
    `copy` seconds of copying at the rate alone, `gemm` seconds of GEMMs, and (1 - slowdown) of
    that rate while both run (they share HBM and L2). A copy that fits inside the GEMMs runs
    slowed throughout; a longer one only while they run (the simulator lowers the comm SMs'
    capacity while a GEMM runs: sim/mok.py _gemms_running)."""
    copy = np.asarray(copy, dtype=np.float64)
    if slowdown <= 0:
        return np.ones_like(copy)
    slowed = np.minimum(copy / (1.0 - slowdown), copy + slowdown * np.asarray(gemm))
    return np.where(copy > 0, slowed / np.maximum(copy, 1e-30), 1.0)


def first_minibatch_end(expert_rows, mb: float, tm: float, aligned: bool) -> np.ndarray:
    """(P,) the row at which each GPU's minibatch 0 ends in its expert-sorted rows (`expert_rows`:
    (P, L) rows per local expert): `mb` rows, or, cut on tile boundaries (aligned;
    mok_kernels/schedule.py), the first row tile of at most `tm` rows of one expert whose first
    row lies at or past `mb`; all rows where the GPU has fewer."""
    r = np.asarray(expert_rows, dtype=np.float64)
    total = r.sum(axis=1)
    if not aligned:
        return np.minimum(float(mb), total)
    offsets = np.cumsum(r, axis=1) - r
    k = np.maximum(np.ceil((mb - offsets) / tm), 0.0)  # first tile of each expert at or past mb
    cand = np.where(k < np.ceil(r / tm), offsets + k * tm, np.inf)
    return np.minimum(cand.min(axis=1), total)


def minibatch_cut(expert_rows: np.ndarray, mb: int, tm: int, aligned: bool) -> tuple[np.ndarray, np.ndarray]:
    """(first row, end row) of each minibatch of one GPU's expert-sorted rows. By rows: every
    `mb` rows. Tile-aligned (our kernel, mok_kernels/schedule.py): minibatch m holds the row
    tiles (at most tm rows of one expert) whose first row lies in [m*mb, (m+1)*mb)."""
    R = int(expert_rows.sum())
    if R == 0:
        return np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64)
    if not aligned:
        lo = np.arange(-(-R // mb), dtype=np.int64) * mb
        return lo, np.minimum(lo + mb, R)
    offsets = np.concatenate([[0], np.cumsum(expert_rows)[:-1]])
    starts = np.concatenate([o + np.arange(0, n, tm) for o, n in zip(offsets, expert_rows) if n > 0])
    mids = starts // mb
    first = np.searchsorted(mids, np.unique(mids), side="left")
    lo = starts[first].astype(np.int64)
    return lo, np.append(lo[1:], R)


def received(scn: Scenario, rotated: bool, gpu: int) -> np.ndarray:
    """(L, P) the rows `gpu` receives by local expert and source, the sources in its order
    (source_orders): the order of its expert-sorted rows (mok_kernels/schedule.py)."""
    return traffic(scn).rows[:, gpu, :].T[:, source_orders(scn.ep, rotated)[gpu]]


@lru_cache(maxsize=64)   # (M, L, P) each: the simulator's cut of one config's minibatch
def gpu_minibatches(scn: Scenario, mb: int, tm: int, aligned: bool, rotated: bool,
                    gpu: int) -> tuple[np.ndarray, np.ndarray]:
    """One GPU's received rows, sorted by local expert, then source (mok_kernels/schedule.py;
    `rotated`: source_orders), cut into minibatches (minibatch_cut): (each minibatch's first
    row (M,), its rows by local expert and source in that GPU's order (M, L, P)). Arrays
    read-only (cached)."""
    P, L = scn.ep, scn.local_experts
    x = received(scn, rotated, gpu)
    lo, hi = minibatch_cut(x.sum(axis=1), mb, tm, aligned)
    c = np.clip(np.cumsum(x.reshape(-1))[None, :], lo[:, None], hi[:, None]) - lo[:, None]
    cnt = np.diff(c, axis=1, prepend=0).reshape(len(lo), L, P)
    lo.flags.writeable = cnt.flags.writeable = False
    return lo, cnt


def minibatch_sources(scn: Scenario, mb: int, tm: int, aligned: bool,
                      rotated: bool) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
    """gpu_minibatches of every GPU."""
    return tuple(gpu_minibatches(scn, mb, tm, aligned, rotated, d) for d in range(scn.ep))


@lru_cache(maxsize=512)
def _source_segments(scn: Scenario, rotated: bool, gpu: int) -> tuple[np.ndarray, ...]:
    """One GPU's received rows as runs of one (local expert, source) each, in its order
    (gpu_minibatches): (rows per local expert (L,), each run's first row, its end, its source
    rank (L*P,), the rows of each source in the runs before run k (L*P + 1, P)). Cached."""
    P = scn.ep
    order = source_orders(P, rotated)[gpu]
    x = received(scn, rotated, gpu).astype(np.float64)
    run = x.reshape(-1)
    ends = np.cumsum(run)
    src = np.tile(order, scn.local_experts)
    before = np.zeros((len(run) + 1, P))
    before[np.arange(1, len(run) + 1), src] = run
    return x.sum(axis=1), ends - run, ends, src, np.cumsum(before, axis=0)


@lru_cache(maxsize=4096)
def _source_totals(scn: Scenario, mb: int, tm: int, aligned: bool, rotated: bool,
                   gpu: int) -> tuple[np.ndarray, np.ndarray]:
    """(the share of `gpu`'s rows from each minibatch on (M,), its rows through minibatch i by
    source rank (M, P)), from its runs (_source_segments) cut as minibatch_cut cuts them.
    Read-only (cached)."""
    expert_rows, starts, ends, src, before = _source_segments(scn, rotated, gpu)
    lo, hi = minibatch_cut(expert_rows, mb, tm, aligned)
    n = len(ends)
    k = np.searchsorted(ends, hi, side="right")     # the run each minibatch ends inside
    cum = before[np.minimum(k, n)].copy()
    inside = k < n
    kk = np.minimum(k, n - 1)
    cum[np.nonzero(inside)[0], src[kk[inside]]] += (hi - starts[kk])[inside]
    total = max(float(expert_rows.sum()), 1.0)
    rest = (total - lo) / total
    rest.flags.writeable = cum.flags.writeable = False
    return rest, cum


@lru_cache(maxsize=4096)
def push_lane_rows(scn: Scenario, mb: int, tm: int, aligned: bool, rotated: bool,
                   comm_sms: tuple[int, ...]) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
    """Per measured GPU (rank 0 alone where ranks are emulated, else every GPU): (the share of
    its rows from each minibatch on (M,), the most rows one comm program of our kernel's push
    dispatch has copied into its minibatches 0..i with each of `comm_sms` (len(comm_sms), M)).

    mok_kernels/megakernel.py, both push dispatches: lane l < max(COMM, P) serves the pair of
    ranks l % P, and a pair's nsub = ceil((lanes - s) / P) lanes share its rows of a minibatch
    evenly (push_loop 'shares'); a lane copies nothing of another pair's rows, and each lane walks
    the minibatches on its own. Where a minibatch's rows come from few sources (an expert's rows
    outnumber a minibatch: they are in source order), those sources' lanes copy it while the
    others idle. Emulated (one GPU's lanes act for every sender of rank 0): pair s is sender s,
    and with fewer comm programs than ranks, program c serves the senders s = c mod COMM in
    turn. Across GPUs: sender s's nsub lanes for receiver d copy its rows of d's minibatches;
    with fewer comm programs than ranks, sender s's program d mod COMM also serves the other
    receivers q = d mod COMM, minibatch after minibatch. Arrays read-only (cached)."""
    P = scn.ep
    cc = np.asarray(comm_sms, dtype=np.int64)
    lanes = np.maximum(cc, P)
    emulated = scn.hardware.emulated_ranks
    totals = lambda d: _source_totals(scn, mb, tm, aligned, rotated, d)  # noqa: E731
    out = []
    for d in ([0] if emulated else range(P)):
        rest, c = totals(d)
        work = np.empty((len(cc), len(c)))
        wide = cc >= P                              # one lane a program
        if emulated:
            nsub = np.ceil((lanes[wide, None] - np.arange(P)[None, :]) / P)   # (n, P)
            work[wide] = (c[None, :, :] / nsub[:, None, :]).max(axis=2)
        else:
            work[wide] = c.max(axis=1)[None, :] / np.ceil((lanes[wide] - d) / P)[:, None]
        for j in np.nonzero(~wide)[0]:
            n = int(cc[j])
            if emulated:                            # program c: the senders c, c + COMM, ...
                per_program = np.zeros((len(c), n))
                np.add.at(per_program.T, np.arange(P) % n, c.T)
                work[j] = per_program.max(axis=1)
            else:                                   # sender s's program d mod COMM
                i = np.arange(len(c))
                work[j] = sum(totals(q)[1][np.minimum(i, len(totals(q)[1]) - 1)]
                              for q in range(d % n, P, n)).max(axis=1)
        work.flags.writeable = False
        out.append((rest, work))
    return tuple(out)


def push_lane_chain(scn: Scenario, p: Params, minibatch, comm_sms, dispatch_push, row_s,
                    compute_s) -> np.ndarray:
    """Seconds until the compute SMs can have done the pass as far as a push dispatch's lanes
    let them (push_lane_rows), (C, G) for configs (G: 1 where ranks are emulated, else P):
    for each minibatch i, when the busiest lane has copied minibatches 0..i (its rows at
    `row_s`, one comm program's seconds a row) plus the compute of the rows from minibatch i on
    (`compute_s`: the whole pass's routed compute, in proportion). 0 for pull dispatch, one rank,
    or a design whose senders copy with every comm SM (push_lanes_bound 0)."""
    row_s, compute_s = np.broadcast_arrays(np.asarray(row_s, np.float64),
                                           np.asarray(compute_s, np.float64))
    out = np.zeros(row_s.shape)
    push = np.broadcast_to(np.asarray(dispatch_push, bool).reshape(-1), (out.shape[0],))
    if scn.ep < 2 or p["push_lanes_bound"] < 0.5 or not push.any():
        return out
    tm, aligned = int(tile_rows(scn, p)), p["tile_aligned_minibatches"] >= 0.5
    rotated = p["source_order_rotated"] >= 0.5
    idx = np.nonzero(push)[0]
    mb = np.broadcast_to(np.asarray(minibatch, np.float64).reshape(-1), push.shape)[idx]
    cc = np.broadcast_to(np.asarray(comm_sms, np.float64).reshape(-1), push.shape)[idx]
    for m in np.unique(mb):
        at = mb == m
        ccs = np.unique(cc[at])
        which = np.searchsorted(ccs, cc[at])
        rows = idx[at]
        lanes = push_lane_rows(scn, int(m), tm, aligned, rotated, tuple(int(c) for c in ccs))
        for g, (rest, work) in enumerate(lanes):
            col = min(g, out.shape[1] - 1)
            out[rows, col] = (work[which] * row_s[rows, col][:, None]
                              + rest[None, :] * compute_s[rows, col][:, None]).max(axis=1)
    return out


def source_orders(P: int, rotated: bool) -> np.ndarray:
    """(P, P) the order in which each GPU's received rows of an expert come, by source rank:
    rank order (mok_kernels/schedule.py), or, rotated (source_order_rotated, a what-if), each
    GPU's sources starting after itself, its own rows last."""
    ranks = np.arange(P)
    if not rotated:
        return np.broadcast_to(ranks, (P, P))
    return (ranks[:, None] + 1 + ranks[None, :]) % P


@lru_cache(maxsize=256)
def first_minibatch_sources(scn: Scenario, mb: float, tm: float, aligned: bool,
                            rotated: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Where every GPU's minibatch 0 comes from: ((P, P) bool, receiver x source: the source sends
    rows to that receiver's minibatch 0 over a link; (P,) rows each source sends to other GPUs'
    minibatches 0). A GPU's received rows are sorted by local expert, then source
    (mok_kernels/schedule.py, as sim/mok.py cuts them), so minibatch 0 holds rows of the first
    sources of each expert it reaches: with uniform routing over M > 1 minibatches, of about
    P x L x minibatch / rows sources, each of which sends to every receiver at once. Arrays
    read-only (cached)."""
    t = traffic(scn)
    P, L = scn.ep, scn.local_experts
    src = source_orders(P, rotated)
    x = np.stack([received(scn, rotated, d).reshape(-1) for d in range(P)])  # (P, L * P)
    end = first_minibatch_end(t.expert_rows(), mb, tm, aligned)
    cum = np.minimum(np.cumsum(x.astype(np.float64), axis=1), end[:, None])
    ordered = np.diff(cum, axis=1, prepend=0.0).reshape(P, L, P).sum(axis=1)
    rows0 = np.zeros_like(ordered)
    np.put_along_axis(rows0, src, ordered, axis=1)  # (receiver, source rank)
    np.fill_diagonal(rows0, 0.0)  # a GPU's own rows cross no link
    member, egress = rows0 > 0, rows0.sum(axis=0)
    member.flags.writeable = egress.flags.writeable = False
    return member, egress


def source_hotspot(scn: Scenario, p: Params, mb, link_out) -> np.ndarray:
    """Seconds until the busiest link out among a GPU's minibatch-0 sources has sent every
    receiver's minibatch-0 rows, (C, P) for configs (`mb`: (C, 1) minibatch rows; `link_out`:
    (1, P) or (1,) each source's link rate, bytes/s). Every receiver starts with its minibatch
    0, and each of its sources sends its rows to all receivers at once (first_minibatch_sources).
    Uniform routing, R rows per GPU, L experts per GPU: minibatch 0 reaches x = ceil(L mb / R)
    experts and holds R / (P L) rows of each from the first sources, so the first source's link
    out carries (P - 1) x min(x, L) x R / (P L) rows while a receiver's link in carries
    (P - 1) / P x mb: R / (L mb) times as much where mb divides R / L (2x for 2 experts per GPU,
    16,384 rows, minibatch 4,096), the same for one minibatch (mb >= R). Zero, (C, 1), on
    emulated hardware (no links: the one GPU's copies act for its peers) and for P <= 2 (the one
    remote peer's link out carries what the receiver's link in does): a column that broadcasts
    keeps the pass's arrays one column wide where one GPU is measured."""
    P = scn.ep
    mb = np.asarray(mb, dtype=np.float64)
    if P <= 2 or scn.hardware.emulated_ranks:
        return np.zeros((mb.shape[0], 1))
    tm, aligned = tile_rows(scn, p), p["tile_aligned_minibatches"] >= 0.5
    act = dispatch_row_bytes(scn, p)
    keys, inverse = np.unique(mb[:, 0], return_inverse=True)
    out = np.empty((len(keys), P))
    for i, m in enumerate(keys):
        member, egress = first_minibatch_sources(scn, float(m), float(tm), bool(aligned),
                                                 p["source_order_rotated"] >= 0.5)
        per_source = egress * act / np.broadcast_to(link_out, (1, P))[0]  # (P,) seconds
        out[i] = np.where(member, per_source[None, :], 0.0).max(axis=1)
    return out[inverse.ravel()]


def boundary_split_share(expert_rows, tm) -> np.ndarray:
    """(P,) the share of each GPU's minibatch boundaries that fall inside an expert
    (`expert_rows`: (P, L) rows per local expert; `tm`: rows per tile). The kernel
    (mok_kernels/schedule.py) starts a minibatch at the first tile at or past its first row, so
    a boundary falls inside an expert where the row it aims at lies in a tile that is not that
    expert's last: those tiles' rows over all rows. 0 where every expert fits one tile."""
    r = np.asarray(expert_rows, dtype=np.float64)
    inner = (tm * np.maximum(np.ceil(r / tm) - 1.0, 0.0)).sum(axis=1)
    return inner / np.maximum(r.sum(axis=1), 1.0)


def minibatch_tiles(scn: Scenario, p: Params, ld: Loads, mb):
    """(minibatches, routed row tiles over them) per config (rows; `mb`: (C, 1) minibatch rows)
    and GPU (columns, as in `ld`)."""
    M = np.maximum(np.ceil(ld.rows[None, :].astype(np.float64) / mb), 1.0)
    base_tiles = np.ceil(ld.expert_rows / tile_rows(scn, p)).sum(axis=1)[None, :]  # (1, P)
    if p["tile_aligned_minibatches"] >= 0.5:
        # cut on tile boundaries, a minibatch below a tile's rows is mostly empty: at most one
        # a row tile holds work (from a tile's rows up, M never exceeds the tiles: unchanged)
        M = np.minimum(M, np.maximum(base_tiles, 1.0))
    # a minibatch boundary inside an expert splits one tile, unless minibatches are cut on tile
    # boundaries
    return M, base_tiles + (1.0 - p["tile_aligned_minibatches"]) * (M - 1)


def joined_sms(p: Params, combine_push, comm_sms, compute_sms):
    """SMs that run the GEMMs once the dispatch is done: the compute SMs, joined by a share
    (comm_join_share) of the comm SMs where the combine leaves them free (a push combine stored
    from the down-projection epilogue: combine_in_epilogue)."""
    epilogue = combine_push & (p["combine_in_epilogue"] >= 0.5)
    return compute_sms + np.where(epilogue, p["comm_join_share"], 0.0) * comm_sms


def list_binds(scn: Scenario, p: Params, combine_push, minibatch, comm_sms) -> np.ndarray:
    """(C,) whether the in-order list's period (list_period) binds on some GPU (every rank, on
    emulated hardware too), on the compute SMs or on the joined SMs (joined_sms), at the
    scenario's work-list lag, for configs (arrays (C,)): only there can a larger lag shorten the
    pass (elsewhere it only lengthens the combine tail). Computed once per distinct (minibatch,
    compute SMs, joined SMs): a grid repeats each."""
    mb, cc = _col(minibatch), _col(comm_sms)
    cx = scn.hardware.sms - cc
    joined = joined_sms(p, _col(combine_push).astype(bool), cc, cx)
    keys, inverse = unique_rows(np.hstack([mb, cx, joined]))
    mb, cx, joined = (np.ascontiguousarray(keys[:, i:i + 1]) for i in range(3))
    M, row_tiles = minibatch_tiles(scn, p, loads(scn), mb)
    lp = list_period(scn, p, row_tiles / M, cx)
    lp_join = list_period(scn, p, row_tiles / M, joined)
    return np.broadcast_to((lp > 0) | (lp_join > 0), M.shape).any(axis=1)[inverse]


def unique_rows(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the distinct rows of a 2-D array, the index of each row's among them), as
    np.unique(a, axis=0, return_inverse=True) gives them: one lexsort, several times faster than
    np.unique's sort of whole rows."""
    order = np.lexsort(a.T[::-1])
    s = a[order]
    begins = np.ones(len(a), dtype=bool)
    begins[1:] = (s[1:] != s[:-1]).any(axis=1)
    inverse = np.empty(len(a), dtype=np.intp)
    inverse[order] = np.cumsum(begins) - 1
    return a[order[begins]], inverse


def push_scan_chunks(P: int, comm_sms, minibatch_rows):
    """Row chunks one comm program visits in a push dispatch of a minibatch of `minibatch_rows`
    rows (arrays broadcast), where the lanes scan chunks (not lanes_copy_runs).

    mok_kernels/megakernel.py, both push dispatches: lane l = pid, pid + COMM, ... < max(COMM, P)
    serves peer l % P, and peer s's nsub = ceil((lanes - s) / P) lanes split the COPY_ROWS-row
    chunks of a minibatch between them; each lane walks its share of ALL the minibatch's chunks
    (loading their source indices) and copies only the rows of its pair of ranks, masking the
    rest. Emulated (PUSH_DISPATCH == 1): this rank's minibatch, the rows whose source is peer s.
    Across GPUs (PUSH_DISPATCH == 2): the sender's lanes for receiver q walk q's minibatch (its
    indices in q's memory) for the sender's own rows. (The "runs" and "shares" loops visit row
    tiles instead: lanes_copy_runs.) So a program visits ceil(P / COMM) lanes x
    ceil(chunks / nsub) chunks, about P times the chunks a pull dispatch's program visits
    (ceil(chunks / COMM)), most of them holding few or none of its rows."""
    return push_lane_visits(P, comm_sms, np.ceil(np.asarray(minibatch_rows, np.float64) / COPY_ROWS))


def push_lane_visits(P: int, comm_sms, items):
    """Items (row chunks or row tiles) one comm program visits when the push lanes split a
    minibatch's `items` (push_scan_chunks): ceil(P / COMM) lanes, each ceil(items / nsub)."""
    cc = np.asarray(comm_sms, dtype=np.float64)
    return np.ceil(P / cc) * np.ceil(np.asarray(items, np.float64) / np.maximum(np.floor(cc / P), 1.0))


def lanes_copy_runs(scn: Scenario) -> bool:
    """Whether the push dispatch's lanes visit the receiver's row tiles and copy their pair's run
    of each (the Triton forward's "runs" loop, mok_kernels/megakernel.py: emulated lanes from
    2026-12-04 12:34 UTC, PUSH_DISPATCH 1; the senders' lanes across GPUs from 13:07, commit
    8ec638c, PUSH_DISPATCH 2, with no record of the scanning ones in between; and today's
    "shares" loop, KernelConfig.push_loop 'shares', from 2026-12-06 10:29 UTC, whose lanes split
    their pair's runs evenly in CR-row chunks, reading every tile's sources 2,048 rows of tiles
    at a load), loading each tile's source ids (push_scan_us), instead of scanning every chunk
    for their rows."""
    return (scn.copy_loop in ("runs", "shares") and scn.pass_ == "fwd"
            and scn.fp8_kernel == "triton")


def push_pass(scn: Scenario, p: Params) -> float:
    """Microseconds a forward pass with push dispatch (Triton megakernel) costs beyond its
    copies, scans and signals (push_pass_us): in traced passes the compute waited 3-29 us longer
    for its first rows under push and the dispatch ended 20-58 us later (docs/calibration.md
    "Session 74"), the same at every number of minibatches; the backward and Gluon FP8 passes'
    push is not fitted (0)."""
    return p["push_pass_us"] if scn.pass_ == "fwd" and scn.fp8_kernel == "triton" else 0.0


def copy_steps(hidden: int) -> int:
    """Column steps of a comm program's row loop over rows of `hidden` columns
    (mok_kernels/megakernel.py copy_rows: steps of CC = min(1024, the next power of two >= H)
    columns, unrolled; each step issues its load and store whether the chunk's rows are masked
    or not)."""
    cc = min(1024, 1 << (int(hidden) - 1).bit_length())
    return -(-int(hidden) // cc)


def copy_load(scn: Scenario, p: Params, pull: bool) -> float:
    """How much more a comm program's copy of a byte holds its SM than copy_gbps_per_sm says
    (the rate of the forward megakernel's pull dispatch and pull combine with their row ids and
    peer offsets loaded ahead, mok_kernels/megakernel.py gather_chunks, Scenario.copy_loop
    "ahead"): 1 / pipe_copy_scale for those copies today ("pipe", "runs", "shares": copy_rows keeps
    two column steps' loads in flight) where a row has two or more steps (copy_steps), else 1; 1 /
    serial_copy_scale for a loop that loads the indices step by step (push lanes, the backward
    megakernel, the Gluon FP8 pass, and every copy of a "serial" record). Plain ratios: a wait
    per chunk predicted held-out runs worse (docs/calibration.md "Session 39")."""
    if pull and scn.pass_ == "fwd" and scn.fp8_kernel == "triton" and scn.copy_loop != "serial":
        if scn.copy_loop in ("pipe", "runs", "shares") and copy_steps(scn.model.hidden) > 1:
            return 1.0 / p["pipe_copy_scale"]
        return 1.0
    return 1.0 / p["serial_copy_scale"]


def scan_chunk_s(scn: Scenario, p: Params) -> float:
    """Seconds a comm program spends visiting one chunk it scans for its rows, beside the bytes
    it copies: push_scan_us (its source-index or slot load) plus push_scan_step_us per column
    step of the mostly masked row loop (copy_steps)."""
    return (p["push_scan_us"] + p["push_scan_step_us"] * copy_steps(scn.model.hidden)) * US


def push_visits(scn: Scenario, P: int, comm_sms, rows, tiles):
    """What one comm program of a push dispatch visits in a minibatch of `rows` rows in `tiles`
    row tiles: its lanes' row tiles where they copy runs (lanes_copy_runs), else the row chunks
    they scan (push_scan_chunks).

    A "shares" lane reads every tile's sources (2,048 rows of tiles a load) but starts a
    copy chain (source ids, rows, stores) only in the tiles that hold its chunks: about the
    tiles a "runs" lane visits (all of them where a pair has one lane, every nsub-th in
    total), so it is charged as those; session 63's A/B timed the two loops within -3 to +7 %
    where the runs' lanes were even (mok_kernels/NOTES.md "Session 63")."""
    if lanes_copy_runs(scn):
        return push_lane_visits(P, comm_sms, tiles)
    return push_scan_chunks(P, comm_sms, rows)


def push_visit_s(scn: Scenario, p: Params) -> float:
    """Seconds one push_visits visit costs: a row tile's source-id load (push_scan_us) where
    the lanes copy runs, else a chunk's scan (scan_chunk_s)."""
    return p["push_scan_us"] * US if lanes_copy_runs(scn) else scan_chunk_s(scn, p)


def push_scan(scn: Scenario, p: Params, rows, tiles, M, comm_sms):
    """Seconds a push dispatch's comm programs spend on their visits (push_visits,
    push_visit_s each), beside the bytes they copy, over the M minibatches of `rows` rows and
    `tiles` row tiles a GPU receives (cut evenly here; the simulator takes the real cut). 0 with
    one rank."""
    if scn.ep < 2:
        return 0.0
    return M * push_visits(scn, scn.ep, comm_sms, rows / M, np.ceil(tiles / M)) * push_visit_s(scn, p)


def in_order_wait(scn: Scenario, p: Params, tiles_per_minibatch, compute_sms) -> np.ndarray:
    """Where the kernel's in-order work list stalls behind a minibatch still in flight, (C, P).

    mok_kernels/megakernel.py hands compute items out from one atomic counter in list order
    (gate/up of the shared expert, gate/up of minibatch 0, down of the shared expert, gate/up of
    minibatch i+1, down of minibatch i, ...), and a program that took a gate/up item spins until
    that minibatch's rows are in. When the section holds at least as many items (row tiles x
    ceil(I / tile_n)) as there are compute SMs, every program ends up spinning on it and none
    reaches the down items behind it; a smaller section leaves programs to run ahead. Only for
    that counter (wave_sync 0); the published design (wave_sync 1) runs each minibatch's tiles
    in whole waves and has no such list."""
    blocks = np.ceil(scn.model.expert_width / p["gemm_tile_n"])
    return (tiles_per_minibatch * blocks >= compute_sms) & (p["wave_sync"] < 0.5)


def list_period(scn: Scenario, p: Params, row_tiles, compute_sms, lag=None) -> np.ndarray:
    """Seconds per minibatch of `row_tiles` routed row tiles that the kernel's in-order work list
    holds `compute_sms` SMs for, where it binds, else 0 (gemm_table.list_period: few long gate/up
    items ahead of many short down items), at the work-list lag `lag` (None: scn.list_lag).
    Only for our kernel's counter (wave_sync 0), forward.
    Item times from the parameters' GEMM table's phase mechanism where it has one for the pass
    and precision; else (h200-hgx8, FP8) the tiles' rate at gemm_eff (fp8_gemm_eff), no per-item
    cost."""
    t = p.gemm_table
    if p["wave_sync"] >= 0.5 or scn.pass_ != "fwd":
        return np.zeros(np.broadcast(row_tiles, compute_sms).shape)
    if t is not None and t.mechanism_covers(scn):
        return list_period_of_table(t, scn, row_tiles, compute_sms, p["sm_scaling"], lag)
    # no measured mechanism: the items at the tiles' rate (gemm_eff), without a per-item cost
    eff = fp8_tile_eff(scn, p) if scn.precision == "fp8" else gemm_efficiency(p, scn)[0]
    return items_period(scn, row_tiles, compute_sms, eff, p["sm_scaling"], lag=lag)


def pull_scan_chunks(scn: Scenario, p: Params, M, comm_sms) -> np.ndarray:
    """Row chunks one comm program of a home visits in each owner's minibatches, (C, P) by
    owner, in our pull combine across GPUs (mok_kernels/megakernel.py, group pull combine); 0
    elsewhere (emulated peers read the rank's own minibatches unmasked; the published design).

    For every minibatch of every owner, the home's programs split the minibatch's COPY_ROWS-row
    chunks (ceil(chunks / COMM) each), load each chunk's combine slots from the owner and copy
    only the rows whose home they are, masking the rest: like a push dispatch's lanes
    (push_scan_chunks), about P times the chunks that hold the home's rows. M: (C, P)
    minibatches per GPU (cut evenly here), comm_sms: (C, 1)."""
    zero = np.zeros(np.broadcast(M, comm_sms).shape)
    if scn.ep < 2 or scn.hardware.emulated_ranks or p["combine_owner_order"] < 0.5:
        return zero
    nchunk = np.ceil(loads(scn).rows[None, :] / M / COPY_ROWS)
    return zero + M * np.ceil(nchunk / np.asarray(comm_sms, dtype=np.float64))


def pull_combine_tail(scn: Scenario, p: Params, kk, M, out: float, sm_rate, link_in,
                      lat_read: float) -> np.ndarray:
    """Seconds of pull combine a home's comm SMs copy after its last down-projection, (C, P).

    Published design (combine_owner_order 0): one minibatch's combine (`kk`), the rows of every
    owner interleaved minibatch by minibatch. Our kernel across GPUs (combine_owner_order 1;
    mok_kernels/megakernel.py, group pull combine): every comm program of home r walks the
    owners in rank order, each owner's minibatches in order, waiting for that minibatch's down
    counter, so it reads owner 1's rows only after owner 0's last minibatch: once the owners'
    GEMMs end, home r still copies the last minibatch of owner 0 and then every row of owners
    1..P-1 (its own rows, local, among them when r > 0). Remote rows at min(link, comm SMs),
    local rows at the comm SMs' rate (`sm_rate`, slowed by the chunks they scan), one read
    latency (the copies pipeline). Emulated peers (one GPU, no group) walk the rank's own
    minibatches only: the published form."""
    P = scn.ep
    if P < 2 or scn.hardware.emulated_ranks or p["combine_owner_order"] < 0.5:
        return kk
    rsd = traffic(scn).rows.sum(axis=2).astype(np.float64)  # (P, P) home (source) x owner
    local = np.diag(rsd)
    remote = rsd.sum(axis=1) - local
    first = rsd[:, 0]  # rows home r gets back from owner 0 (its own at r = 0)
    is0 = np.arange(P) == 0
    rest_local = np.where(is0, 0.0, local)[None, :]
    rest_remote = (remote - np.where(is0, 0.0, first))[None, :]
    remote_rate = np.minimum(link_in, sm_rate)
    k_first = first[None, :] * out / np.where(is0[None, :], sm_rate, remote_rate)
    k_rest = rest_local * out / sm_rate + rest_remote * out / remote_rate
    return k_first / M + k_rest + lat_read


def ring_capacity(p: Params, macrobatch, minibatch, scn: Scenario | None = None) -> np.ndarray:
    """Rows the ring buffer holds, (C, 1): the macrobatch knob, raised to a minibatch plus one
    row tile when smaller (a tile-aligned minibatch spans up to minibatch + tile_m - 1 rows;
    mok_kernels/megakernel.py KernelConfig.macrobatch). The Gluon FP8 pass (`scn` on it) has no
    macrobatch: its ring holds every routed row (capacity 1.0, mok_kernels/gluon_fp8/mok.py
    GluonFP8MoK: C + 128 rows), so it never wraps."""
    ring = np.maximum(_col(macrobatch), _col(minibatch) + p["gemm_tile_m"])
    if scn is not None and gluon_fp8(scn):
        return np.full(ring.shape, float(np.iinfo(np.int64).max))
    return ring


def iteration_rows(scn: Scenario, ld: Loads) -> np.ndarray:
    """Routed rows per GPU, (P,), that a ring must hold in the median timed iteration.

    The benchmark draws a fresh routing before every timed iteration (mok_kernels/bench.py
    Workload.refresh), and an iteration lasts as long as its busiest GPU. A GPU's rows are the
    count of the P x tokens x top_k routes that land on it: binomial about the seeded routing's
    count, standard deviation sqrt(rows x (1 - rows / routes)). The median over iterations of
    the largest of P such excesses is z_P = Phi^-1(0.5^(1/P)) standard deviations (0 at P = 1,
    0.54 at P = 2, 1.38 at P = 8): a ring that holds the mean rows recycles in most iterations."""
    P = scn.ep
    rows = ld.rows.astype(np.float64)
    if P < 2:
        return rows
    routes = float(P * scn.tokens * scn.model.top_k)
    sd = np.sqrt(rows * np.clip(1.0 - rows / routes, 0.0, 1.0))
    return rows + NormalDist().inv_cdf(0.5 ** (1.0 / P)) * sd


def one_domain(scn: Scenario) -> Scenario:
    """The same scenario with one scale-up domain holding the whole EP group (no scale-out)."""
    return scn.with_(hardware=scn.hardware.with_(domain_size=max(scn.hardware.domain_size, scn.ep)))


def scale_out_time(total, one_domain_total):
    """What spanning scale-up domains adds to a pass: its time less the same pass on one domain
    (seconds or ms, arrays or floats). The one-domain pass can end a rounding error later
    (-1e-16): that reads 0, so no breakdown shows a negative term."""
    extra = np.asarray(total, dtype=np.float64) - one_domain_total
    extra = np.where((extra < 0) & (extra > -1e-9 * np.abs(total)), 0.0, extra)
    return float(extra) if extra.ndim == 0 else extra


def quantize_time(scn: Scenario, p: Params) -> float:
    """Seconds to quantize BF16 rows for FP8/MXFP8 GEMMs in a pass of their own (HBM-bound; 0 for
    BF16, and 0 where the kernel quantizes while copying: fp8_fused, its cost is in the dispatch
    copy rate): forward, the local tokens before the dispatch; backward, the tokens x top_k
    output-gradient rows a GPU computes on (on average). Bytes per element in QUANTIZE_BYTES."""
    if fp8_fused(scn, p):
        return 0.0
    rows = scn.tokens * (1 if scn.pass_ == "fwd" else scn.model.top_k)
    hw = scn.hardware
    return rows * scn.model.hidden * QUANTIZE_BYTES[scn.precision] / (hw.hbm_tbps * 1e12 * p["hbm_eff"])


def mok_config_terms(scn: Scenario, p: Params, config: Config, refuse_overflow: bool = True) -> dict:
    """mok_terms for one Config (arrays of length 1); a capacity that would overflow is refused
    (``refuse_overflow``; False for a measured run: it happened, so its schedule held)."""
    config.check_for(scn)
    r = mok_terms(scn, p, np.array([config.dispatch == "push"]), np.array([config.combine == "push"]),
                  np.array([config.minibatch]), np.array([config.comm_sms]),
                  np.array([config.macrobatch]), np.array([config.capacity]))
    if refuse_overflow and r["overflow"][0]:
        need = min(float(loads(scn).rows.max()) * p["capacity_headroom"],
                   scn.ep * scn.tokens * min(scn.model.top_k, scn.local_experts))
        least = np.ceil(1000 * need / (scn.ep * scn.tokens * min(scn.model.top_k, scn.local_experts))) / 1000
        raise MokInputError(
            f"--capacity {config.capacity} holds {int(r['capacity_rows'][0])} rows, fewer than the "
            f"busiest GPU's {int(loads(scn).rows.max())} routed rows times the safety headroom "
            f"{p['capacity_headroom']}: the schedule would overflow; use --capacity "
            + ("1 (every routed row)" if least >= 1 else f"{least:g} to 1"))
    return r
