"""MoK backward megakernel in Triton: one persistent launch per backward pass with the forward's
roles (communication programs, compute programs taking items from one atomic counter in a fixed
list order, bounded spin-waits on counters), then a small epilogue that sums each token's k
gradient slots in a fixed order. BF16 operands, float32 accumulation; no atomics on data, so the
gradients are bitwise identical from run to run.

Inputs: what the forward was given (tokens x, top-k ids, router weights w, the layer's packed
weights) and the output gradient dOut of every home token. Per routed row (token t, slot j,
expert e) with h = silu(g) * u, g = x Wg[e], u = x Wu[e], y = h Wd[e]:
  dA = dOut[t] Wd[e]^T,  dw[t, j] = dOut[t] . y = sum_i dA_i h_i,  dH = w[t, j] dA,
  dg = dH * u * silu'(g),  du = dH * silu(g),  dX = [dg|du] [Wg|Wu]^T,
  dWd[e] += (w h)^T dOut[t],  dWg|dWu[e] += x^T [dg|du];
the shared expert the same on the home tokens with weight 1 (and no router-weight gradient).

Roles. Program ids < comm_sms are communication programs, the rest compute programs.
- Reverse of combine (dispatch of output gradients), pull: comm programs copy, minibatch by
  minibatch, each scheduled row's token x and its dOut row from the (emulated) peers' buffers
  into two local row buffers of the schedule's full capacity, then raise the minibatch's ready
  counter (release). The rows are dispatched again rather than kept from the forward: the
  forward's ring is overwritten as it goes, and the weight-gradient items read every row of an
  expert again at the end, so the backward keeps C rows of x and of dOut (no ring reuse).
- Compute walks one list (atomic work counter), every dependency pointing backwards:
  A(shared), A(mb 0), X(shared), A(mb 1), X(mb 0), ..., X(last mb), then W items.
  A item (row tile, BN_A columns of I): recomputes g, u for the tile (the forward's gate/up GEMM,
  K = H) and, in the same K loop, dA = dOut Wd^T; stores [dg|du] (bf16, in the gate|up interleaved
  layout of the packed weights), w*h (bf16, for dWd) and the tile's partial dw per column block
  (fp32); raises the tile's counter. Recomputing g, u costs one more GEMM (4HI of the backward's
  12HI FLOPs per row) but holds nothing from the forward; saving g and u instead would keep
  (N + C) x 2I bf16 per MoE layer from forward to backward. That is the opt-in
  ``BackwardTiles(saved_gu=True)``: the forward (``KernelConfig(save_for_backward=True)``) stores
  bf16 g and u at the rows and columns where this pass writes [dg|du], and the A item's K loop
  is dA alone (one dot); h is rebuilt from the bf16 g, u (as a bf16 torch autograd would).
  X item (row tile, BN_X columns of H): waits for the tile's A items, dX = [dg|du] Wgu^T
  (K = 2I) stored straight into the home slot (token, j) (reverse of dispatch, push); the first
  column block also sums the tile's partial dw in fixed column order into the slot's dw word.
  The shared expert's dX goes to a home buffer.
  W item (expert, weight tile): owns one tile of dWg|dWu (rows of H x columns of 2I) or of dWd
  (rows of I x columns of H) and sums over the expert's row tiles in row order (waiting for each
  tile's A items), float32 accumulator stored as float32: deterministic and complete (an expert
  that received nothing gets zeros).
- Epilogue: dx[t] = shared dX[t] + sum_{j=0..k-1} slot (t, j), float32, fixed order; dw from the
  slots. A stalled wait or a capacity overflow makes dx and dw NaN and traps the launch
  (``on_error="trap"``) or makes ``run`` raise MegakernelStallError / CapacityOverflowError
  (``on_error="raise"``, which also fills the weight gradients with NaN).

Modes: ``rank=None`` (P virtual ranks in one launch, each with its slice of the grid, schedule,
row buffers, sync words and experts) and ``rank=r`` (one emulated rank of an EP-P group whose
peers' tokens and dOut rows, and the home dX / dw slots, live in local memory). Not yet: group
mode (real GPUs / LocalGroup), push dispatch of the gradients, pull combine of dX, TMA weight
loads. Triton is imported lazily.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import torch

from mok_model.errors import MokInputError

from .megakernel import MegakernelStallError, MoKLayer, _kernels, pointer_weight_refusal
from .schedule import CapacityOverflowError, Schedule

BWD_STALL_CODES = {
    10: "backward: gradient-row wait for the dispatch ready counter of minibatch {info}",
    11: "backward: dX wait for the SwiGLU-backward items of row tile {info}",
    12: "backward: weight-gradient wait for the SwiGLU-backward items of row tile {info}",
}


@dataclass
class BackwardTiles:
    """Tile shapes of the backward megakernel (the knobs, block_m and block_k come from the
    forward layer's KernelConfig). 0 = chosen from the layer's shape."""

    bn_a: int = 64          # I columns per SwiGLU-backward (A) item: 3 accumulators of BM x bn_a
    bn_x: int = 128         # H columns per dX item
    bk_x: int = 0           # K step of the dX GEMM over 2I (0: 64, or the largest dividing 2I)
    bw: int = 0             # I / 2I side of a weight-gradient tile (0: 256, or the largest
    #                          power of two dividing the padded I)
    bw_h: int = 128         # H side of a weight-gradient tile
    bk_rows: int = 64       # rows per step of the weight-gradient reduction
    num_warps: int = 8
    num_stages: int = 3
    # Defaults since 2026-12-01 (H200, kimi-k2 / glm-5 EP 8 4096 tokens: 28.97 -> 22.89 ms and
    # 23.27 -> 18.14 ms with bw 256, mok_kernels/bench_variants_s12.log); False = the first path:
    w_flat: bool = True      # W items: wait for all of the expert's row tiles, then ONE pipelined
    #                          K loop over its contiguous rows (False: a 2-step pipeline per
    #                          128-row tile, filled and drained 8x per 1024 rows)
    a_fuse_gu: bool = True   # A items: gate and up in one dot of N = 2*bn_a (x tile read from
    #                          shared memory once per K step; 2 dots per step instead of 3)
    saved_gu: bool = False   # A items read g and u saved by the forward (KernelConfig(
    #                          save_for_backward=True); MoKBackward.run(saved_gu=...)) instead of
    #                          recomputing them: K loop of one dot (dA), 12HI of 16HI FLOPs a row
    w_direct: bool = False   # routed experts' weight gradients stored straight into fresh
    #                          tensors in the parameters' layout, dWg / dWu (V*EL, H, I) and dWd
    #                          (V*EL, I, H) (BackwardResult.routed), not into the packed float32
    #                          buffers that weight_grads() then unpacks and copies
    w_bf16: bool = False     # with w_direct: those tensors bfloat16 (the float32 sums rounded to
    #                          nearest even once, as .to(bfloat16) of the packed path gives)
    w_tma: bool = False      # with w_flat: W items load their operands by the tensor memory
    #                          accelerator (one descriptor per operand and item over exactly the
    #                          expert's rows) instead of masked pointer loads
    a_epi: int = 0           # with saved_gu: the A item's dA (BM x bn_a float32) goes through a
    #                          per-program scratch in global memory and the SwiGLU-backward
    #                          epilogue runs in a_epi-column chunks, so one dot of N = bn_a up
    #                          to 256 fits the registers (0: the epilogue in registers, bn_a at
    #                          most the forward's bn_gu). Where min(bn_a, 256) does not divide
    #                          the padded I, the A items run as with a_epi=0
    diag: int = 0            # timing diagnostic only, gradients left incomplete: 1 = skip the W
    #                          items, 2 = skip the X items, 3 = both (mok bench --bwd-tiles diag=N
    #                          times A only / A+X / A+W; the difference with diag=0 is the part's cost)


# The training path's backward (autograd.MegakernelForward's default, with g/u saved by the
# forward): the fastest tiles measured, one H200, 2026-12-01, kimi-k2 / glm-5, EP 8 rank 0,
# 1024-4096 tokens (calibration/runs/h200/bwd_saved.jsonl, mok_kernels/logs_s13/bwd_saved.log:
# 23.52 -> 17.36 ms and 19.25 -> 13.71 ms at 4096 tokens against BackwardTiles()), and since
# 2026-12-02 the routed weight gradients written in the parameters' layout and dtype (w_direct;
# autograd sets w_bf16 for bf16 parameters): the same gradient bits, the kernel 3-16% faster and
# the autograd backward 22-31% (calibration/runs/h200/bwd_direct.jsonl,
# mok_kernels/logs_s29/autograd_cost.log); since 2026-12-03 the A items as one dot of N = 256
# where 256 divides the padded I (a_epi: kimi-k2 / glm-5 at 1,024 / 4,096 tokens 2.5-5.9% faster,
# benchmarks/device/s32_a_epi2.sh, mok_kernels/logs_s32/). Not the dataclass defaults: those stay the
# recomputing path that `mok bench --pass bwd`'s "default" times and the model is fitted on.
TRAINING_TILES = "saved_gu=1,bn_a=256,a_epi=128,bn_x=256,w_direct=1"
RECOMPUTE_TILES = "w_direct=1"    # the autograd path's backward when the forward saved nothing


def training_tiles() -> BackwardTiles:
    """A fresh BackwardTiles of the training default (TRAINING_TILES): saved g/u, A items of 256
    columns with their epilogue in two chunks (where 256 divides the padded I; else 128 columns,
    the epilogue in registers), bn_x 256, weight gradients written directly."""
    return parse_tiles(TRAINING_TILES)


def recompute_tiles() -> BackwardTiles:
    """A fresh BackwardTiles of the autograd path without saved g/u (RECOMPUTE_TILES): the
    defaults with weight gradients written directly."""
    return parse_tiles(RECOMPUTE_TILES)


TILE_POW2 = ("bn_a", "bn_x", "bw_h", "bk_rows")      # powers of two >= 16
TILE_POW2_OR_0 = ("bk_x", "bw")                      # the same, or 0: chosen from the shape


def tile_field_rule(name: str, v: int) -> str | None:
    """The rule BackwardTiles field `name`'s value `v` breaks, or None (parse_tiles and
    `mok bench --bwd-tiles`). a_epi's rule needs saved_gu and bn_a: MoKBackward and
    bench.check_bwd_tiles check it."""
    if isinstance(BackwardTiles.__dataclass_fields__[name].default, bool):
        return None if v in (0, 1) else "0 or 1 is required"
    if name in TILE_POW2 or name in TILE_POW2_OR_0:
        if (v == 0 and name in TILE_POW2_OR_0) or (v >= 16 and not v & (v - 1)):
            return None
        return "tile sizes must be powers of two >= 16" + (
            " (or 0: chosen from the shape)" if name in TILE_POW2_OR_0 else "")
    if name == "diag":
        return None if 0 <= v <= 3 else "allowed 0 (full pass), 1, 2, 3 (timing diagnostics)"
    if name == "num_warps":
        return None if v in (1, 2, 4, 8, 16, 32) else "a power of two from 1 to 32"
    if name == "num_stages":
        return None if v >= 1 else "an integer >= 1 is required"
    return None


def tile_fields(spec: str, label: str = "backward tiles") -> dict[str, int]:
    """The fields of one tile set ``"field=value,..."`` (``"default"``: none), each checked:
    a BackwardTiles field, a value in plain ASCII digits (int() would also take '+64', '1_28',
    ' 64' and '٦٤'; a negative one is read so that its field's rule names it), given once, and
    within its field's rule (tile_field_rule). MokInputError naming ``label`` and the item."""
    fields = BackwardTiles.__dataclass_fields__
    given: dict[str, int] = {}
    for item in [] if spec.strip() in ("", "default") else spec.split(","):
        name, _, val = item.partition("=")
        name = name.strip()
        if name not in fields or not val:
            raise MokInputError(f"{label} {item!r}: expected field=value with a field of "
                                f"{', '.join(fields)}")
        if not re.fullmatch(r"[0-9]+|-0*[1-9][0-9]*", val):
            raise MokInputError(f"{label} {item!r}: {val!r} is not an integer in plain ASCII "
                                f"digits (no sign, spaces or digit separators)")
        if name in given:
            raise MokInputError(f"{label} {spec!r}: {name} is given twice (each field once; the "
                                f"last value would silently win)")
        v = given[name] = int(val)
        rule = tile_field_rule(name, v)
        if rule:
            raise MokInputError(f"{label} {item!r}: {name}={v}: {rule}")
    return given


def parse_tiles(spec: str) -> BackwardTiles:
    """BackwardTiles from ``"field=value,..."`` (``""`` or ``"default"``: the defaults), e.g.
    ``"w_flat=1,a_fuse_gu=1,bn_x=256"``; booleans as 0/1. MokInputError (a ValueError) on a
    field tile_fields refuses (a_epi's rule, which needs saved_gu and bn_a, is MoKBackward's
    and `mok bench --bwd-tiles`')."""
    if not isinstance(spec, str):
        raise MokInputError(f"backward tiles {spec!r}: a string 'field=value,...' is required")
    t = BackwardTiles()
    for name, v in tile_fields(spec).items():
        setattr(t, name, bool(v) if isinstance(getattr(t, name), bool) else v)
    return t


def tiles_label(t: BackwardTiles) -> str:
    """The fields of ``t`` that differ from the defaults, as parse_tiles reads them."""
    d = BackwardTiles()
    diff = [f"{k}={int(v)}" for k, v in vars(t).items() if v != getattr(d, k)]
    return ",".join(diff) or "default"


def _pow2_divisor(n: int, cap: int) -> int:
    """Largest power of two <= cap dividing n (at least 16)."""
    d = cap
    while d > 16 and n % d:
        d //= 2
    if n % d:
        raise ValueError(f"{n} is not a multiple of 16")
    return d


def _scratch_allocator() -> None:
    """Give Triton a global-memory allocator for the kernels' in-kernel tensor descriptors
    (BackwardTiles.w_tma: 128 bytes a descriptor and program), unless the caller set one."""
    from triton.runtime import _allocation

    if _allocation._allocator.get() is _allocation._NULL_ALLOCATOR:
        import triton

        def alloc(size: int, alignment: int, stream: int | None) -> torch.Tensor:
            return torch.empty(size, dtype=torch.int8, device="cuda")

        triton.set_allocator(alloc)


_BWD: dict[str, Any] = {}
_HELPERS = ("wait_geq", "signal", "tile_of", "peer_row", "copy_rows", "trap")
# Triton device functions the kernels call by name: the forward's helpers and wgrad_tile, set by
# _bwd_kernels() before any kernel is compiled
wait_geq = signal = tile_of = peer_row = copy_rows = trap = wgrad_tile = None
a_saved_epi = wait_tiles = expert_rows = store_dwgu = store_dwd = wgrad_flat = wgrad_tma = None


def _bwd_kernels() -> dict[str, Any]:
    """Define the backward kernels on first use (Triton imported lazily); the device helpers are
    the forward's (megakernel._kernels)."""
    if _BWD:
        return _BWD
    import triton
    import triton.language as tl

    # the forward's device helpers as module globals: the kernels below resolve them by name
    # (globals rather than closure cells, which the Triton interpreter does not see)
    mk = _kernels()
    globals().update({name: mk[name] for name in _HELPERS})

    @triton.jit
    def _wgrad_tile(acc, a_ptr, a_ld, a_cols, a_cm, b_ptr, b_ld, b_cols, b_cm, shared, t_lo, t_hi,
                   tile_row0_ptr, tile_rows_ptr, cnt_ptr, need, NS, err_ptr, max_spin,
                   A_H: tl.constexpr, B_H: tl.constexpr, BM: tl.constexpr, BKR: tl.constexpr):
        """acc += A^T B summed over the rows of row tiles t_lo..t_hi-1 in order, each after its
        A items are done (counter >= need). A (rows x a_cols) at a_ptr, leading dimension a_ld;
        B likewise. A_H / B_H: the operand lives in a buffer with the shared rows first (row
        hrow0), else in the dispatched-row buffer (row row0)."""
        rr = tl.arange(0, BKR)
        for t in range(t_lo, t_hi):
            wait_geq(cnt_ptr + t, need, err_ptr, 12, t, max_spin, "gpu")
            if shared:
                row0 = t * BM
                nrows = tl.minimum(NS - row0, BM)
                hrow0 = row0
            else:
                row0 = tl.load(tile_row0_ptr + t)
                nrows = tl.load(tile_rows_ptr + t)
                hrow0 = NS + row0
            if A_H:
                ra0 = hrow0
            else:
                ra0 = row0
            if B_H:
                rb0 = hrow0
            else:
                rb0 = row0
            for r in range(0, nrows, BKR):
                m = (r + rr) < nrows
                ra = (ra0 + r + rr).to(tl.int64)
                rb = (rb0 + r + rr).to(tl.int64)
                a = tl.load(a_ptr + ra[:, None] * a_ld + a_cols[None, :],
                            mask=m[:, None] & a_cm[None, :], other=0.0)
                b = tl.load(b_ptr + rb[:, None] * b_ld + b_cols[None, :],
                            mask=m[:, None] & b_cm[None, :], other=0.0)
                acc = tl.dot(tl.trans(a), b, acc)
        return acc

    @triton.jit
    def _wait_tiles(cnt_ptr, t_lo, t_hi, need, err_ptr, max_spin):
        """Wait until the counters of row tiles t_lo..t_hi-1 all reach ``need`` (polled as one
        vector: one acquire round trip per 64 tiles; the barrier orders them before every
        thread's reads); a stall sets error bit 12 with the first late tile."""
        tv = tl.arange(0, 64)
        for t0 in range(t_lo, t_hi, 64):
            ts = t0 + tv
            tm = ts < t_hi
            v = tl.atomic_add(cnt_ptr + ts, 0, mask=tm, sem="acquire", scope="gpu")
            low = tl.min(tl.where(tm, v, need), axis=0)
            spins = 0
            while (low < need) & (spins < max_spin):
                v = tl.atomic_add(cnt_ptr + ts, 0, mask=tm, sem="acquire", scope="gpu")
                low = tl.min(tl.where(tm, v, need), axis=0)
                spins += 1
                if (spins % 256) == 0:
                    if tl.load(err_ptr, volatile=True) != 0:
                        spins = max_spin
            if low < need:
                first = tl.min(tl.where(tm & (v < need), ts, t_hi), axis=0)
                tl.atomic_or(err_ptr, 1 << 12)
                tl.atomic_xchg(err_ptr + 12, first)
            tl.debug_barrier()

    @triton.jit
    def _expert_rows(shared, t_lo, t_hi, tile_row0_ptr, tile_rows_ptr, NS):
        """(first row, end row, offset of the hs / dgu buffers' rows) of the rows a weight
        gradient sums over: the shared expert's NS home rows, or the local expert's contiguous
        dispatched rows (row tiles t_lo..t_hi-1; hs / dgu hold them after the NS shared rows)."""
        if shared:
            r_lo = t_lo * 0
            r_hi = NS + t_lo * 0
            h_off = t_lo * 0
        else:
            r_lo = t_lo * 0
            r_hi = t_lo * 0
            if t_hi > t_lo:
                r_lo = tl.load(tile_row0_ptr + t_lo)
                r_hi = tl.load(tile_row0_ptr + t_hi - 1) + tl.load(tile_rows_ptr + t_hi - 1)
            h_off = NS + t_lo * 0
        return r_lo, r_hi, h_off

    @triton.jit
    def _wgrad_flat(acc, a_ptr, a_ld, a_cols, a_cm, b_ptr, b_ld, b_cols, b_cm, r_lo, r_hi,
                    a_off, b_off, BKR: tl.constexpr):
        """acc += A^T B over rows r_lo..r_hi-1 in BKR steps in row order (BackwardTiles.w_flat:
        one software pipeline per W item, the expert's row tiles waited for first). A's rows
        at a_ptr + (a_off + row) * a_ld, columns a_cols (mask a_cm); B likewise."""
        rr = tl.arange(0, BKR)
        a_p = a_ptr + a_cols[None, :]
        b_p = b_ptr + b_cols[None, :]
        for r in range(r_lo, r_hi, BKR):
            m = (r + rr) < r_hi
            ra = (a_off + r + rr).to(tl.int64)
            rb = (b_off + r + rr).to(tl.int64)
            a = tl.load(a_p + ra[:, None] * a_ld, mask=m[:, None] & a_cm[None, :], other=0.0)
            b = tl.load(b_p + rb[:, None] * b_ld, mask=m[:, None] & b_cm[None, :], other=0.0)
            acc = tl.dot(tl.trans(a), b, acc)
        return acc

    @triton.jit
    def _wgrad_tma(acc, a_d, a_c0, b_d, b_c0, nrows, BKR: tl.constexpr):
        """_wgrad_flat with its operands loaded by the tensor memory accelerator
        (BackwardTiles.w_tma): a_d / b_d describe exactly the item's nrows rows (and the
        matrices' columns), so rows past the expert's last and columns past the edge read as
        zeros without masks; a_c0 / b_c0 the tile's first columns."""
        for r in range(0, nrows, BKR):
            a = a_d.load([r, a_c0])
            b = b_d.load([r, b_c0])
            acc = tl.dot(tl.trans(a), b, acc)
        return acc

    @triton.jit
    def _store_dwgu(acc, cb, hcols, hm, o_gu, ow_gu_ptr, r_e, direct, NR, I_REAL,
                    H: tl.constexpr, I: tl.constexpr, BW: tl.constexpr, BN_GU: tl.constexpr):
        """Store a dWg|dWu tile (rows hcols of H, packed column block cb): into the routed
        expert's dWg / dWu in the parameters' layout and dtype (direct), else into the packed
        float32 buffer at o_gu."""
        ccols = cb * BW + tl.arange(0, BW)
        if direct:
            # packed column -> (gate 0 / up 1, column of the unpadded I)
            cw = ccols % (2 * BN_GU)
            sel = (cw // BN_GU).to(tl.int64)
            ii = (ccols // (2 * BN_GU)) * BN_GU + cw % BN_GU
            o_w = (ow_gu_ptr + sel[None, :] * NR * H * I_REAL + r_e * H * I_REAL
                   + hcols[:, None].to(tl.int64) * I_REAL + ii[None, :])
            tl.store(o_w, acc.to(ow_gu_ptr.dtype.element_ty),
                     mask=hm[:, None] & (ii < I_REAL)[None, :])
        else:
            tl.store(o_gu + hcols[:, None].to(tl.int64) * (2 * I) + ccols[None, :], acc,
                     mask=hm[:, None])

    @triton.jit
    def _store_dwd(acc, hb, icols, o_dn, ow_d_ptr, r_e, direct, I_REAL, H: tl.constexpr,
                   BW_H: tl.constexpr):
        """Store a dWd tile (rows icols of I, column block hb of H): direct into the routed
        expert's dWd (parameters' layout and dtype), else into the packed float32 buffer."""
        hcols = hb * BW_H + tl.arange(0, BW_H)
        hm = hcols < H
        if direct:
            o_w = ow_d_ptr + r_e * I_REAL * H
            tl.store(o_w + icols[:, None].to(tl.int64) * H + hcols[None, :],
                     acc.to(ow_d_ptr.dtype.element_ty),
                     mask=(icols < I_REAL)[:, None] & hm[None, :])
        else:
            tl.store(o_dn + icols[:, None].to(tl.int64) * H + hcols[None, :], acc,
                     mask=hm[None, :])

    @triton.jit
    def _a_saved_epi(acc_d, ca, gu_ptr, dgu_ptr, hs_ptr, hrows, rmask, wr, I: tl.constexpr,
                     BN_GU: tl.constexpr):
        """SwiGLU backward of an A item's column block ca (columns of I) from the saved g, u:
        stores dg, du (interleaved layout) and w*h (bf16); returns the rows' partial dw."""
        cg = (ca // BN_GU) * (2 * BN_GU) + ca % BN_GU
        cu = cg + BN_GU
        om = rmask[:, None]
        gu_r = gu_ptr + hrows[:, None] * (2 * I)
        g = tl.load(gu_r + cg[None, :], mask=om, other=0.0).to(tl.float32)
        u = tl.load(gu_r + cu[None, :], mask=om, other=0.0).to(tl.float32)
        sig = tl.sigmoid(g)
        s = g * sig                                          # silu(g)
        hval = s * u
        dh = acc_d * wr[:, None]
        du = dh * s
        dg = dh * u * (sig * (1.0 + g * (1.0 - sig)))
        o_r = dgu_ptr + hrows[:, None] * (2 * I)
        tl.store(o_r + cg[None, :], dg.to(tl.bfloat16), mask=om)
        tl.store(o_r + cu[None, :], du.to(tl.bfloat16), mask=om)
        tl.store(hs_ptr + hrows[:, None] * I + ca[None, :], (hval * wr[:, None]).to(tl.bfloat16),
                 mask=om)
        return tl.sum(acc_d * hval, axis=1)

    globals()["a_saved_epi"] = _a_saved_epi
    globals()["wgrad_tile"] = _wgrad_tile
    globals()["wgrad_flat"] = _wgrad_flat
    globals()["wgrad_tma"] = _wgrad_tma
    globals()["store_dwgu"] = _store_dwgu
    globals()["store_dwd"] = _store_dwd
    globals()["wait_tiles"] = _wait_tiles
    globals()["expert_rows"] = _expert_rows

    @triton.jit
    def mok_bwd_kernel(
        x_src_ptr,        # bf16 base of the peers' tokens; peer s's (N, H) rows at + x_off[s]
        g_src_ptr,        # bf16 base of the peers' output gradients dOut, same layout as x
        x_off_ptr,        # (P,) int64 element offsets of each peer's rows
        x_loc_ptr,        # (NS, H) bf16 home tokens (shared expert)
        g_loc_ptr,        # (NS, H) bf16 their dOut
        w_ptr,            # (P*N*k,) fp32 router weights by global slot (token*k + j)
        xr_ptr, gr_ptr,   # (C, H) bf16 dispatched token rows and dOut rows
        dgu_ptr,          # (NS + C, 2I) bf16 [dg|du], gate|up interleaved per BN_GU block
        hs_ptr,           # (NS + C, I) bf16 w * h (1 * h for the shared rows)
        gu_ptr,           # A_SAVED: (NS + C, 2I) bf16 g and u saved by the forward ([dg|du]'s
                          # layout); unused (any tensor) otherwise
        dwp_ptr,          # (C, NB_A) fp32 partial router-weight gradient per column block
        da_ptr,           # A_EPI: (grid, BM, BN_A) fp32 scratch, one tile a program
        dxs_ptr,          # bf16 base of the home dX slot buffers; rank r's (N*k, H) slots
        dxs_off_ptr,      # (P,) int64 at + dxs_off[r]; slot (token, j) = token*k + j
        dws_ptr,          # (P*N*k,) fp32 router-weight gradient per global slot
        shdx_ptr,         # (NS, H) fp32 shared-expert dX
        wgu_ptr,          # (EL+1, H, 2I) bf16 gate|up interleaved per BN_GU-column block
        wd_ptr,           # (EL+1, I, H) bf16 down
        dwgu_ptr,         # (EL+1, H, 2I) fp32 gradient of the packed gate|up weights
        dwd_ptr,          # (EL+1, I, H) fp32 gradient of the down weights (W_DIRECT: one
                          # slot a rank, the shared expert's only)
        ow_gu_ptr,        # W_DIRECT: (2, NR, H, I_REAL) dWg then dWu of the NR = V*EL routed
        ow_d_ptr,         # experts, (NR, I_REAL, H) dWd: the parameters' layout and dtype
        recv_src_ptr, recv_slot_ptr,                  # (C,) int32
        tile_exp_ptr, tile_row0_ptr, tile_rows_ptr,   # (T_max,) int32
        mb_tile_ptr, mb_row_ptr, nmb_ptr,             # (MB_max+1,), (MB_max+1,), (1,) int32
        etile_ptr,        # (EL+1,) int32 first row tile of each local expert, then the end
        sync_ptr, err_ptr,                            # int32 workspace (zeroed), (16,) int32
        NS, N_RANK, SLOTS, EL, COMM, HAS_SHARED, NR, I_REAL,
        READY_OFF, TC_OFF, SH_OFF, WORK_OFF,
        STALL, max_spin, JOIN,
        GRID_V, C_STRIDE, T_STRIDE, MB_STRIDE, E_STRIDE, SYNC_STRIDE,
        H: tl.constexpr, I: tl.constexpr, BM: tl.constexpr, BN_GU: tl.constexpr,
        BN_A: tl.constexpr, BN_X: tl.constexpr, BK: tl.constexpr, BK_X: tl.constexpr,
        BW: tl.constexpr, BW_H: tl.constexpr, BKR: tl.constexpr, CR: tl.constexpr,
        CC: tl.constexpr, W_FLAT: tl.constexpr = False, A_FUSE_GU: tl.constexpr = False,
        DIAG: tl.constexpr = 0, A_SAVED: tl.constexpr = False, A_SPLIT: tl.constexpr = False,
        W_DIRECT: tl.constexpr = False, W_TMA: tl.constexpr = False, A_EPI: tl.constexpr = 0,
    ):
        # Virtual rank VR owns programs [VR*GRID_V, (VR+1)*GRID_V) and its slice of every
        # per-rank buffer (one rank per launch: VR = 0).
        VR = tl.program_id(0) // GRID_V
        pid = tl.program_id(0) % GRID_V
        vr = VR.to(tl.int64)
        cap = C_STRIDE
        xr_ptr += vr * cap * H
        gr_ptr += vr * cap * H
        dgu_ptr += vr * (NS + cap) * (2 * I)
        hs_ptr += vr * (NS + cap) * I
        if A_SAVED:
            gu_ptr += vr * (NS + cap) * (2 * I)
        x_loc_ptr += vr * NS * H
        g_loc_ptr += vr * NS * H
        shdx_ptr += vr * NS * H
        sync_ptr += vr * SYNC_STRIDE
        recv_src_ptr += vr * C_STRIDE
        recv_slot_ptr += vr * C_STRIDE
        tile_exp_ptr += vr * T_STRIDE
        tile_row0_ptr += vr * T_STRIDE
        tile_rows_ptr += vr * T_STRIDE
        mb_tile_ptr += vr * MB_STRIDE
        mb_row_ptr += vr * MB_STRIDE
        nmb_ptr += vr
        etile_ptr += vr * E_STRIDE
        E_BASE = VR * (EL + 1)                        # this rank's experts in the stacked weights
        NB_A: tl.constexpr = I // BN_A
        NB_X: tl.constexpr = (H + BN_X - 1) // BN_X
        dwp_ptr += vr * cap * NB_A
        nmb = tl.load(nmb_ptr)
        crow = tl.arange(0, CR)
        if pid < COMM:
            # ------- reverse of combine, pull: token rows and their dOut rows into local rows -------
            for mb in range(0, nmb):
                r0 = tl.load(mb_row_ptr + mb)
                r1 = tl.load(mb_row_ptr + mb + 1)
                nchunk = (r1 - r0 + CR - 1) // CR
                for c in range(pid, nchunk, COMM):
                    rows = r0 + c * CR + crow
                    m = rows < r1
                    src = tl.load(recv_src_ptr + rows, mask=m, other=0)
                    s_off = peer_row(x_off_ptr, src, N_RANK, H)
                    d_off = rows.to(tl.int64) * H
                    copy_rows(x_src_ptr, s_off, xr_ptr, d_off, m, H, CC)
                    copy_rows(g_src_ptr, s_off, gr_ptr, d_off, m, H, CC)
                if (STALL == 0) | (mb > 0):
                    signal(sync_ptr + READY_OFF + mb, "gpu")
        if (pid >= COMM) | (JOIN != 0):
            # ---------------- compute (comm programs join once their dispatch is done) ----------------
            ns_tiles = tl.where(HAS_SHARED != 0, (NS + BM - 1) // BM, 0)
            tiles_used = tl.load(mb_tile_ptr + nmb)
            total_ax = (ns_tiles + tiles_used) * (NB_A + NB_X)
            NC_GU: tl.constexpr = 2 * I // BW         # dWg|dWu tile columns
            NB_HW: tl.constexpr = (H + BW_H - 1) // BW_H
            NWT_GU: tl.constexpr = NB_HW * NC_GU
            NWT: tl.constexpr = NWT_GU + (I // BW) * NB_HW
            total = total_ax + (EL + HAS_SHARED) * NWT
            if DIAG & 1:                              # timing diagnostic: no W items
                total = total_ax
            rm = tl.arange(0, BM)
            rk = tl.arange(0, BK)
            rkx = tl.arange(0, BK_X)
            sec = -1
            sec_start = 0
            sec_end = 0
            waited = 0
            w_ready = -1                              # W items: the expert last waited for
            g = tl.atomic_add(sync_ptr + WORK_OFF, 1, sem="relaxed", scope="gpu")
            while g < total:
                g_next = tl.atomic_add(sync_ptr + WORK_OFF, 1, sem="relaxed", scope="gpu")
                if g < total_ax:
                    # sections A(0=shared), X(-1), A(1), X(0), A(2), X(1), ...; batch b>=1 is
                    # minibatch b-1 (the forward's walk, gate/up -> A, down -> X)
                    while g >= sec_end:
                        sec += 1
                        sec_start = sec_end
                        bb = sec // 2 - (sec % 2)
                        bc = tl.minimum(tl.maximum(bb, 1), nmb)
                        ntb = tl.load(mb_tile_ptr + bc) - tl.load(mb_tile_ptr + bc - 1)
                        nt = tl.where(bb == 0, ns_tiles, tl.where((bb >= 1) & (bb <= nmb), ntb, 0))
                        sec_end += nt * tl.where(sec % 2 == 0, NB_A, NB_X)
                    item = g - sec_start
                    is_a = sec % 2 == 0
                    b = sec // 2 - (sec % 2)
                    mbi = tl.maximum(b - 1, 0)
                    t_base = tl.load(mb_tile_ptr + tl.minimum(mbi, nmb))
                    shared = b == 0
                    if is_a:
                        if (b > 0) & (waited < b):
                            wait_geq(sync_ptr + READY_OFF + mbi, COMM, err_ptr, 10, mbi, max_spin, "gpu")
                            waited = b
                        tt = item // NB_A
                        nb = item % NB_A
                        tile, row0, nrows, e, hrow0 = tile_of(tt, shared, t_base, tile_row0_ptr,
                                                              tile_rows_ptr, tile_exp_ptr, NS, EL,
                                                              E_BASE, BM)
                        rmask = rm < nrows
                        rows = (row0 + rm).to(tl.int64)
                        if shared:
                            xa = x_loc_ptr + rows[:, None] * H + rk[None, :]
                            ga = g_loc_ptr + rows[:, None] * H + rk[None, :]
                            wr = tl.where(rmask, 1.0, 0.0)
                        else:
                            xa = xr_ptr + rows[:, None] * H + rk[None, :]
                            ga = gr_ptr + rows[:, None] * H + rk[None, :]
                            slot = tl.load(recv_slot_ptr + row0 + rm, mask=rmask, other=0)
                            wr = tl.load(w_ptr + slot, mask=rmask, other=0.0)
                        ca = nb * BN_A + tl.arange(0, BN_A)                  # columns of I
                        cg = (ca // BN_GU) * (2 * BN_GU) + ca % BN_GU        # gate, interleaved
                        cu = cg + BN_GU                                      # up
                        wgu_e = wgu_ptr + e.to(tl.int64) * H * (2 * I)
                        wd_e = wd_ptr + e.to(tl.int64) * I * H
                        if A_EPI > 0:
                            # saved g, u; dA = dOut Wd^T in one dot of N = BN_A, parked in this
                            # program's float32 scratch tile, the SwiGLU backward in A_EPI-column
                            # chunks read back from it (a 128 x 256 accumulator and its epilogue
                            # do not fit the registers together)
                            acc_d = tl.zeros((BM, BN_A), dtype=tl.float32)
                            for k0 in range(0, H, BK):
                                d = tl.load(ga + k0, mask=rmask[:, None], other=0.0)
                                bd = tl.load(wd_e + ca[None, :] * H + (k0 + rk)[:, None])
                                acc_d = tl.dot(d, bd, acc_d)
                            da = (da_ptr + tl.program_id(0).to(tl.int64) * (BM * BN_A)
                                  + rm[:, None] * BN_A)
                            tl.debug_barrier()        # the previous item's reads are done
                            tl.store(da + tl.arange(0, BN_A)[None, :], acc_d)
                            tl.debug_barrier()        # every thread's part is written
                            hrows = (hrow0 + rm).to(tl.int64)
                            dwr = tl.zeros((BM,), dtype=tl.float32)
                            for c0 in tl.static_range(0, BN_A, A_EPI):
                                cc = c0 + tl.arange(0, A_EPI)
                                dwr += a_saved_epi(tl.load(da + cc[None, :]), nb * BN_A + cc,
                                                   gu_ptr, dgu_ptr, hs_ptr, hrows, rmask, wr, I,
                                                   BN_GU)
                            if b > 0:
                                tl.store(dwp_ptr + rows * NB_A + nb, dwr, mask=rmask)
                            signal(sync_ptr + tl.where(shared, SH_OFF, TC_OFF) + tile, "gpu")
                        elif A_SPLIT:
                            # saved g, u and BN_A = 2 x 64: two 64-column dots on one dOut tile
                            # (the tile read once per 128 columns), the SwiGLU backward one half
                            # at a time (one 128 x 128 epilogue spills: sm_90 compile)
                            HB: tl.constexpr = BN_A // 2
                            ca0 = nb * BN_A + tl.arange(0, HB)
                            ca1 = ca0 + HB
                            acc_d0 = tl.zeros((BM, HB), dtype=tl.float32)
                            acc_d1 = tl.zeros((BM, HB), dtype=tl.float32)
                            for k0 in range(0, H, BK):
                                d = tl.load(ga + k0, mask=rmask[:, None], other=0.0)
                                kk = (k0 + rk)[:, None]
                                acc_d0 = tl.dot(d, tl.load(wd_e + ca0[None, :] * H + kk), acc_d0)
                                acc_d1 = tl.dot(d, tl.load(wd_e + ca1[None, :] * H + kk), acc_d1)
                            hrows = (hrow0 + rm).to(tl.int64)
                            dwr = a_saved_epi(acc_d0, ca0, gu_ptr, dgu_ptr, hs_ptr, hrows, rmask,
                                              wr, I, BN_GU)
                            dwr += a_saved_epi(acc_d1, ca1, gu_ptr, dgu_ptr, hs_ptr, hrows, rmask,
                                               wr, I, BN_GU)
                            if b > 0:
                                tl.store(dwp_ptr + rows * NB_A + nb, dwr, mask=rmask)
                            signal(sync_ptr + tl.where(shared, SH_OFF, TC_OFF) + tile, "gpu")
                        else:
                            acc_d = tl.zeros((BM, BN_A), dtype=tl.float32)
                            hrows = (hrow0 + rm).to(tl.int64)
                            if A_SAVED:
                                # g, u saved by the forward: the K loop is dA = dOut Wd^T alone
                                for k0 in range(0, H, BK):
                                    d = tl.load(ga + k0, mask=rmask[:, None], other=0.0)
                                    bd = tl.load(wd_e + ca[None, :] * H + (k0 + rk)[:, None])
                                    acc_d = tl.dot(d, bd, acc_d)
                                gu_r = gu_ptr + hrows[:, None] * (2 * I)
                                acc_g = tl.load(gu_r + cg[None, :], mask=rmask[:, None],
                                                other=0.0).to(tl.float32)
                                acc_u = tl.load(gu_r + cu[None, :], mask=rmask[:, None],
                                                other=0.0).to(tl.float32)
                            elif A_FUSE_GU:
                                # one dot of N = 2*BN_A on the B tile [gate cols | up cols] (two
                                # contiguous runs of the interleaved layout): the x tile is read from
                                # shared memory once per K step instead of twice
                                c2 = nb * BN_A + tl.arange(0, 2 * BN_A) % BN_A
                                cgu = ((c2 // BN_GU) * (2 * BN_GU) + c2 % BN_GU
                                       + (tl.arange(0, 2 * BN_A) // BN_A) * BN_GU)
                                # two runs of BN_A contiguous columns, each starting at a multiple of
                                # BN_A (the hints keep the load a 16-byte cp.async in the pipeline)
                                cgu = tl.max_contiguous(tl.multiple_of(cgu, BN_A), BN_A)
                                acc_gu = tl.zeros((BM, 2 * BN_A), dtype=tl.float32)
                                for k0 in range(0, H, BK):
                                    a = tl.load(xa + k0, mask=rmask[:, None], other=0.0)
                                    d = tl.load(ga + k0, mask=rmask[:, None], other=0.0)
                                    kk = (k0 + rk)[:, None]
                                    bgu = tl.load(wgu_e + kk * (2 * I) + cgu[None, :])
                                    bd = tl.load(wd_e + ca[None, :] * H + kk)    # Wd^T (BK x BN_A)
                                    acc_gu = tl.dot(a, bgu, acc_gu)
                                    acc_d = tl.dot(d, bd, acc_d)
                                acc_g, acc_u = tl.split(tl.permute(tl.reshape(acc_gu, (BM, 2, BN_A)),
                                                                   (0, 2, 1)))
                            else:
                                acc_g = tl.zeros((BM, BN_A), dtype=tl.float32)
                                acc_u = tl.zeros((BM, BN_A), dtype=tl.float32)
                                for k0 in range(0, H, BK):
                                    a = tl.load(xa + k0, mask=rmask[:, None], other=0.0)
                                    d = tl.load(ga + k0, mask=rmask[:, None], other=0.0)
                                    kk = (k0 + rk)[:, None]
                                    bg = tl.load(wgu_e + kk * (2 * I) + cg[None, :])
                                    bu = tl.load(wgu_e + kk * (2 * I) + cu[None, :])
                                    bd = tl.load(wd_e + ca[None, :] * H + kk)    # Wd^T (BK x BN_A)
                                    acc_g = tl.dot(a, bg, acc_g)
                                    acc_u = tl.dot(a, bu, acc_u)
                                    acc_d = tl.dot(d, bd, acc_d)
                            sig = tl.sigmoid(acc_g)
                            s = acc_g * sig                                      # silu(g)
                            hval = s * acc_u
                            dh = acc_d * wr[:, None]
                            du = dh * s
                            dg = dh * acc_u * (sig * (1.0 + acc_g * (1.0 - sig)))
                            om = rmask[:, None]
                            tl.store(dgu_ptr + hrows[:, None] * (2 * I) + cg[None, :], dg.to(tl.bfloat16), mask=om)
                            tl.store(dgu_ptr + hrows[:, None] * (2 * I) + cu[None, :], du.to(tl.bfloat16), mask=om)
                            tl.store(hs_ptr + hrows[:, None] * I + ca[None, :],
                                     (hval * wr[:, None]).to(tl.bfloat16), mask=om)
                            if b > 0:
                                tl.store(dwp_ptr + rows * NB_A + nb, tl.sum(acc_d * hval, axis=1), mask=rmask)
                            signal(sync_ptr + tl.where(shared, SH_OFF, TC_OFF) + tile, "gpu")
                    elif (DIAG & 2) == 0:                     # (timing diagnostic 2: no X work)
                        tt = item // NB_X
                        nbx = item % NB_X
                        tile, row0, nrows, e, hrow0 = tile_of(tt, shared, t_base, tile_row0_ptr,
                                                              tile_rows_ptr, tile_exp_ptr, NS, EL,
                                                              E_BASE, BM)
                        wait_geq(sync_ptr + tl.where(shared, SH_OFF, TC_OFF) + tile, NB_A, err_ptr,
                                 11, tile, max_spin, "gpu")
                        rmask = rm < nrows
                        rows = (row0 + rm).to(tl.int64)
                        hrows = (hrow0 + rm).to(tl.int64)
                        hc = nbx * BN_X + tl.arange(0, BN_X)
                        hm = hc < H
                        wgu_e = wgu_ptr + e.to(tl.int64) * H * (2 * I)
                        a_p = dgu_ptr + hrows[:, None] * (2 * I) + rkx[None, :]
                        b_p = wgu_e + hc[None, :].to(tl.int64) * (2 * I) + rkx[:, None]   # Wgu^T
                        acc_x = tl.zeros((BM, BN_X), dtype=tl.float32)
                        for k0 in range(0, 2 * I, BK_X):
                            a = tl.load(a_p + k0, mask=rmask[:, None], other=0.0)
                            bw = tl.load(b_p + k0, mask=hm[None, :], other=0.0)
                            acc_x = tl.dot(a, bw, acc_x)
                        om_x = rmask[:, None] & hm[None, :]
                        if shared:
                            tl.store(shdx_ptr + rows[:, None] * H + hc[None, :], acc_x, mask=om_x)
                        else:
                            slot = tl.load(recv_slot_ptr + row0 + rm, mask=rmask, other=0)
                            c_off = peer_row(dxs_off_ptr, slot, SLOTS, H)
                            tl.store(dxs_ptr + c_off[:, None] + hc[None, :], acc_x.to(tl.bfloat16),
                                     mask=om_x)
                            if nbx == 0:
                                dsum = tl.zeros((BM,), dtype=tl.float32)
                                for j in range(0, NB_A):             # fixed column-block order
                                    dsum += tl.load(dwp_ptr + rows * NB_A + j, mask=rmask, other=0.0)
                                tl.store(dws_ptr + slot, dsum, mask=rmask)
                else:
                    # ---- weight gradients: one item per (expert, weight tile), shared expert first ----
                    wi = g - total_ax
                    ew = wi // NWT + (1 - HAS_SHARED)         # 0: shared, 1..EL: local expert ew-1
                    item = wi % NWT
                    shared = ew == 0
                    le = tl.maximum(ew - 1, 0)
                    e = E_BASE + tl.where(shared, EL, le)
                    if shared:
                        t_lo = ns_tiles * 0
                        t_hi = ns_tiles
                    else:
                        t_lo = tl.load(etile_ptr + le)
                        t_hi = tl.load(etile_ptr + le + 1)
                    cnt = sync_ptr + tl.where(shared, SH_OFF, TC_OFF)
                    if shared:
                        xsrc = x_loc_ptr
                        gsrc = g_loc_ptr
                    else:
                        xsrc = xr_ptr
                        gsrc = gr_ptr
                    if W_FLAT | W_TMA:
                        # one wait per expert and program (every row tile's A items done): a
                        # program's next items are mostly the same expert's other tiles
                        if ew != w_ready:
                            wait_tiles(cnt, t_lo, t_hi, NB_A, err_ptr, max_spin)
                            w_ready = ew
                    r_lo, r_hi, h_off = expert_rows(shared, t_lo, t_hi, tile_row0_ptr,
                                                    tile_rows_ptr, NS)
                    r_e = (VR * EL + le).to(tl.int64)        # w_direct: the routed expert's slot
                    direct = False
                    if W_DIRECT:
                        direct = not shared
                    nrows = r_hi - r_lo
                    if item < NWT_GU:
                        # dWg|dWu[e][h block, c block] = sum_rows x^T [dg|du]
                        hb = item // NC_GU
                        cb = item % NC_GU
                        hcols = hb * BW_H + tl.arange(0, BW_H)
                        hm = hcols < H
                        ccols = cb * BW + tl.arange(0, BW)
                        acc_gu = tl.zeros((BW_H, BW), dtype=tl.float32)
                        if W_TMA:     # descriptors over exactly the expert's rows
                            xg_d = tl.make_tensor_descriptor(
                                xsrc + r_lo.to(tl.int64) * H, shape=[tl.maximum(nrows, 1), H],
                                strides=[H, 1], block_shape=[BKR, BW_H])
                            dg_d = tl.make_tensor_descriptor(
                                dgu_ptr + (h_off + r_lo).to(tl.int64) * (2 * I),
                                shape=[tl.maximum(nrows, 1), 2 * I], strides=[2 * I, 1],
                                block_shape=[BKR, BW])
                            acc_gu = wgrad_tma(acc_gu, xg_d, hb * BW_H, dg_d, cb * BW, nrows, BKR)
                        elif W_FLAT:
                            acc_gu = wgrad_flat(acc_gu, xsrc, H, hcols, hm, dgu_ptr, 2 * I, ccols,
                                                ccols < 2 * I, r_lo, r_hi, 0, h_off, BKR)
                        else:
                            acc_gu = wgrad_tile(acc_gu, xsrc, H, hcols, hm, dgu_ptr, 2 * I, ccols,
                                                ccols < 2 * I, shared, t_lo, t_hi, tile_row0_ptr,
                                                tile_rows_ptr, cnt, NB_A, NS, err_ptr, max_spin,
                                                False, True, BM, BKR)
                        o_gu = dwgu_ptr + e.to(tl.int64) * H * (2 * I)
                        if W_DIRECT:
                            o_gu = dwgu_ptr + vr * H * (2 * I)   # the shared expert: a slot a rank
                        store_dwgu(acc_gu, cb, hcols, hm, o_gu, ow_gu_ptr, r_e, direct, NR, I_REAL,
                                   H, I, BW, BN_GU)
                    else:
                        # dWd[e][i block, h block] = sum_rows (w h)^T dOut
                        it = item - NWT_GU
                        ib = it // NB_HW
                        hb = it % NB_HW
                        icols = ib * BW + tl.arange(0, BW)
                        hcols = hb * BW_H + tl.arange(0, BW_H)
                        hm = hcols < H
                        acc_dn = tl.zeros((BW, BW_H), dtype=tl.float32)
                        if W_TMA:
                            hd_d = tl.make_tensor_descriptor(
                                hs_ptr + (h_off + r_lo).to(tl.int64) * I,
                                shape=[tl.maximum(nrows, 1), I], strides=[I, 1],
                                block_shape=[BKR, BW])
                            gd_d = tl.make_tensor_descriptor(
                                gsrc + r_lo.to(tl.int64) * H, shape=[tl.maximum(nrows, 1), H],
                                strides=[H, 1], block_shape=[BKR, BW_H])
                            acc_dn = wgrad_tma(acc_dn, hd_d, ib * BW, gd_d, hb * BW_H, nrows, BKR)
                        elif W_FLAT:
                            acc_dn = wgrad_flat(acc_dn, hs_ptr, I, icols, icols < I, gsrc, H, hcols,
                                                hm, r_lo, r_hi, h_off, 0, BKR)
                        else:
                            acc_dn = wgrad_tile(acc_dn, hs_ptr, I, icols, icols < I, gsrc, H, hcols,
                                                hm, shared, t_lo, t_hi, tile_row0_ptr, tile_rows_ptr,
                                                cnt, NB_A, NS, err_ptr, max_spin, True, False, BM, BKR)
                        o_dn = dwd_ptr + e.to(tl.int64) * I * H
                        if W_DIRECT:
                            o_dn = dwd_ptr + vr * I * H
                        store_dwd(acc_dn, hb, icols, o_dn, ow_d_ptr, r_e, direct, I_REAL, H, BW_H)
                g = g_next

    @triton.jit(do_not_specialize=["TRAP"])    # trap or raise: one compiled variant
    def bwd_epilogue_kernel(shdx_ptr, dxs_ptr, dws_ptr, dx_ptr, dw_ptr, err_ptr, over_ptr, tok0,
                            HAS_SHARED, TRAP, K: tl.constexpr, KP: tl.constexpr, H: tl.constexpr,
                            BH: tl.constexpr):
        """dx[t] = shared dX[t] + sum_{j=0..k-1} dX slot (t, j) and dw[t] = dw slots (t, :),
        float32, fixed order; NaN (and, with TRAP, a trapped launch) if the pass failed."""
        t = tl.program_id(0)
        cols = tl.program_id(1) * BH + tl.arange(0, BH)
        cm = cols < H
        g = (tok0 + t).to(tl.int64)
        acc = tl.load(shdx_ptr + t.to(tl.int64) * H + cols, mask=cm & (HAS_SHARED != 0), other=0.0)
        for j in tl.static_range(K):
            acc += tl.load(dxs_ptr + (g * K + j) * H + cols, mask=cm, other=0.0).to(tl.float32)
        failed = (tl.load(err_ptr, volatile=True) | tl.load(over_ptr, volatile=True)) != 0
        acc = tl.where(failed, float("nan"), acc)
        tl.store(dx_ptr + t.to(tl.int64) * H + cols, acc, mask=cm)
        if tl.program_id(1) == 0:
            jj = tl.arange(0, KP)
            dw = tl.load(dws_ptr + g * K + jj, mask=jj < K, other=0.0)
            dw = tl.where(failed, float("nan"), dw)
            tl.store(dw_ptr + t.to(tl.int64) * K + jj, dw, mask=jj < K)
        if (TRAP != 0) & failed:
            trap()

    _BWD.update(bwd=mok_bwd_kernel, epilogue=bwd_epilogue_kernel)
    return _BWD


@dataclass
class BackwardResult:
    """Gradients of one backward pass, as the kernel leaves them (views of the pass's buffers,
    overwritten by the next pass). dx (V*N, H) and dw (V*N, k) float32 for the launch's home
    tokens; dwgu (V*(EL+1), H, 2Ip) and dwd (V*(EL+1), Ip, H) float32 in the packed layout: each
    served rank's EL experts then its shared expert (computed on that rank's home tokens). With
    BackwardTiles.w_direct, dwgu / dwd hold the shared expert's slot of each rank only (V, ...)
    and ``routed`` the routed experts' gradients: fresh tensors of this pass, dWg / dWu
    (V*EL, H, I) and dWd (V*EL, I, H), float32 or (w_bf16) bfloat16, in global expert order."""

    dx: torch.Tensor
    dw: torch.Tensor
    dwgu: torch.Tensor
    dwd: torch.Tensor
    routed: tuple[torch.Tensor, ...] | None = None   # BackwardTiles.w_direct: (dWg, dWu, dWd)


class MoKBackward:
    """The backward megakernel of a forward MoKLayer (``rank=r`` or ``rank=None``): its packed
    weights, schedule settings, knobs (comm_sms, minibatch, capacity, block_m, block_k, copy_rows,
    max_spin, on_error, join) and grid. Dispatch is pull and dX goes back by push whatever the
    forward's dispatch/combine knobs say. Buffers are allocated once, here."""

    def __init__(self, layer: MoKLayer, tiles: BackwardTiles | None = None) -> None:
        why = why_not_backward(layer)
        if why is not None:
            raise ValueError(f"the backward megakernel cannot run this layer: {why}")
        self.layer, self.tiles = layer, tiles or BackwardTiles()
        lay, t, cfg = layer, self.tiles, layer.cfg
        if t.a_epi and not (t.saved_gu and 16 <= t.a_epi <= min(t.bn_a, 256)
                            and not t.a_epi & (t.a_epi - 1)):
            raise ValueError(f"a_epi={t.a_epi}: needs saved_gu=1 and a power of two from 16 to "
                             f"bn_a ({min(t.bn_a, 256)})")
        # a_epi runs where its (up to 256) columns divide the padded width; elsewhere the A
        # items run as without it (bn_a at most bn_gu, the epilogue in registers)
        self.a_epi = t.a_epi if t.a_epi and lay.Ip % min(t.bn_a, 256) == 0 else 0
        self.bn_a = min(t.bn_a, 256 if self.a_epi else cfg.bn_gu)
        self._da: torch.Tensor | None = None          # the a_epi scratch (scratch())
        self.bk_x = t.bk_x or _pow2_divisor(2 * lay.Ip, 64)
        self.bw = t.bw or _pow2_divisor(lay.Ip, 256)
        for name, v in (("bn_a", self.bn_a), ("bn_x", t.bn_x), ("bw_h", t.bw_h), ("bk_rows", t.bk_rows)):
            if v < 16 or v & (v - 1):
                raise ValueError(f"{name}={v}: tile sizes must be powers of two >= 16")
        if t.w_bf16 and not t.w_direct:
            raise ValueError("w_bf16=1 needs w_direct=1 (the packed weight-gradient buffers are "
                             "float32)")
        if t.w_tma and not t.w_flat:
            raise ValueError("w_tma=1 needs w_flat=1 (one row loop per weight-gradient item)")
        if t.diag not in (0, 1, 2, 3):
            raise ValueError(f"diag={t.diag}: allowed 0 (full pass), 1, 2, 3 (timing diagnostics)")
        if lay.Ip % self.bn_a or (2 * lay.Ip) % self.bk_x or lay.Ip % self.bw:
            raise ValueError(f"padded expert width {lay.Ip} does not split into bn_a={self.bn_a}, "
                             f"bk_x={self.bk_x}, bw={self.bw}")
        p, n, k, h, ip, v = lay.ep, lay.tokens, lay.topk, lay.H, lay.Ip, lay.vranks
        c, dev, bf, f32 = lay.capacity, lay.device, torch.bfloat16, torch.float32
        self.nb_a = ip // self.bn_a
        ns_tiles = (n + cfg.block_m - 1) // cfg.block_m
        self.off = {"ready": 0, "tc": lay.mb_max, "sh": lay.mb_max + lay.t_max}
        self.off["work"] = self.off["sh"] + ns_tiles + 1
        self.sync_stride = self.off["work"] + 1
        self.xr = torch.empty(v * c, h, dtype=bf, device=dev)
        self.gr = torch.empty(v * c, h, dtype=bf, device=dev)
        self.dgu = torch.empty(v * (n + c), 2 * ip, dtype=bf, device=dev)
        self.hs = torch.empty(v * (n + c), ip, dtype=bf, device=dev)
        self.dwp = torch.empty(v * c, self.nb_a, dtype=f32, device=dev)
        self.dxs = torch.zeros(p * n * k, h, dtype=bf, device=dev)      # home dX slots
        self.dws = torch.zeros(p * n * k, dtype=f32, device=dev)        # home dw slots
        self.shdx = torch.zeros(v * n, h, dtype=f32, device=dev)
        ne = v if t.w_direct else v * (lay.el + 1)     # w_direct: the shared expert's slots
        self.w_dtype = bf if t.w_bf16 else f32
        self.routed: tuple[torch.Tensor, ...] | None = None   # the last w_direct pass's outputs
        self.dwgu = torch.empty(ne, h, 2 * ip, dtype=f32, device=dev)
        self.dwd = torch.empty(ne, ip, h, dtype=f32, device=dev)
        self.dx = torch.empty(v * n, h, dtype=f32, device=dev)
        self.dw = torch.empty(v * n, k, dtype=f32, device=dev)
        self.sync = torch.zeros(v * self.sync_stride, dtype=torch.int32, device=dev)
        self.err = torch.zeros(16, dtype=torch.int32, device=dev)
        self.dxs_off = lay.comb_off            # the same (P, N*k, H) slot layout as the forward's
        self.overflow_acc = torch.zeros(1, dtype=torch.int32, device=dev)
        self.stall_test = 0
        self.last_schedule: Schedule | None = None

    def expert_tiles(self, sched: Schedule) -> torch.Tensor:
        """(V, EL+1) int32: first row tile of each local expert, then the tile count (tensor ops,
        no host read)."""
        off = sched.offsets.reshape(-1, self.layer.el + 1).long()
        bm = self.layer.cfg.block_m
        nt = (off[:, 1:] - off[:, :-1] + bm - 1) // bm
        return torch.cat([torch.zeros_like(nt[:, :1]), nt.cumsum(1)], 1).to(torch.int32).contiguous()

    def new_routed(self) -> tuple[torch.Tensor, ...]:
        """Fresh (dWg, dWu, dWd) tensors for one w_direct pass: (V*EL, H, I) twice, from one
        (2, V*EL, H, I) buffer, and (V*EL, I, H), in the tiles' weight-gradient dtype."""
        lay = self.layer
        nr, h, i, dev = lay.vranks * lay.el, lay.H, lay.I, lay.device
        gu = torch.empty(2, nr, h, i, dtype=self.w_dtype, device=dev)
        return gu[0], gu[1], torch.empty(nr, i, h, dtype=self.w_dtype, device=dev)

    def launch(self, x_all: torch.Tensor, dout_all: torch.Tensor, w_all: torch.Tensor,
               sched: Schedule, gu: torch.Tensor | None = None,
               routed: tuple[torch.Tensor, ...] | None = None) -> None:
        """Zero the sync words and run the persistent backward megakernel (no host read).
        ``gu``: the forward's saved g and u (tiles.saved_gu), else None (recomputed).
        ``routed``: with tiles.w_direct, the (dWg, dWu, dWd) tensors of new_routed() the pass
        writes (a fresh set if None, kept as ``self.routed``)."""
        ks, lay, cfg, t = _bwd_kernels(), self.layer, self.layer.cfg, self.tiles
        v = lay.vranks
        if t.w_direct:
            routed = routed if routed is not None else self.new_routed()
            dwg, dwu, _ = routed
            if dwu.data_ptr() != dwg.data_ptr() + dwg.numel() * dwg.element_size():
                raise ValueError("routed: the (dWg, dWu, dWd) of new_routed() (dWu right after "
                                 "dWg in one buffer)")
            self.routed = routed
            ow_gu, ow_d = dwg, routed[2]
        else:
            ow_gu = ow_d = self.dwgu
        self.sync.zero_()
        if cfg.grid:
            grid = cfg.grid
        else:
            grid = torch.cuda.get_device_properties(x_all.device).multi_processor_count
        per_rank = grid // v
        if cfg.comm_sms >= per_rank and not cfg.join:
            raise ValueError(f"comm_sms={cfg.comm_sms} leaves no compute programs "
                             f"({per_rank} programs per rank, grid {grid}, {v} rank(s))")
        x_loc = x_all[lay.tok0:lay.tok0 + v * lay.ns]
        g_loc = dout_all[lay.tok0:lay.tok0 + v * lay.ns]
        etile = self.expert_tiles(sched)
        if t.w_tma:
            if x_all.data_ptr() % 16 or dout_all.data_ptr() % 16:
                raise ValueError("w_tma=1: the tokens and output gradients must start on a "
                                 "16-byte boundary (tensor descriptors); copy them first")
            _scratch_allocator()
        ks["bwd"][(per_rank * v,)](
            x_all, dout_all, lay.x_off, x_loc, g_loc, w_all, self.xr, self.gr, self.dgu, self.hs,
            self.hs if gu is None else gu, self.dwp, self.scratch(per_rank * v), self.dxs,
            self.dxs_off, self.dws, self.shdx,
            lay.wg, lay.wd, self.dwgu, self.dwd, ow_gu, ow_d, sched.recv_src, sched.recv_slot,
            sched.tile_expert, sched.tile_row0, sched.tile_rows, sched.mb_tile, sched.mb_row,
            sched.num_mb, etile, self.sync, self.err,
            lay.ns, lay.tokens, lay.tokens * lay.topk, lay.el, cfg.comm_sms, int(lay.has_shared),
            v * lay.el, lay.I,
            self.off["ready"], self.off["tc"], self.off["sh"], self.off["work"],
            self.stall_test, lay.max_spin, int(cfg.join),
            per_rank, lay.capacity, lay.t_max, lay.mb_max + 1, lay.el + 1, self.sync_stride,
            H=lay.H, I=lay.Ip, BM=cfg.block_m, BN_GU=cfg.bn_gu, BN_A=self.bn_a, BN_X=t.bn_x,
            BK=cfg.block_k, BK_X=self.bk_x, BW=self.bw, BW_H=t.bw_h, BKR=t.bk_rows,
            CR=cfg.copy_rows, CC=lay.chunk, W_FLAT=t.w_flat, A_FUSE_GU=t.a_fuse_gu,
            DIAG=t.diag, A_SAVED=gu is not None,
            A_SPLIT=gu is not None and self.bn_a > 64 and not self.a_epi,
            W_DIRECT=t.w_direct, W_TMA=t.w_tma, A_EPI=self.a_epi if gu is not None else 0,
            num_warps=t.num_warps, num_stages=t.num_stages)

    def scratch(self, grid: int) -> torch.Tensor:
        """The A items' float32 dA scratch of tiles.a_epi, one BM x bn_a tile per program of a
        launch of ``grid`` programs (allocated on first use); any tensor without a_epi."""
        if not self.a_epi:
            return self.dwp
        size = grid * self.layer.cfg.block_m * self.bn_a
        if self._da is None or self._da.numel() < size:
            self._da = torch.empty(size, dtype=torch.float32, device=self.layer.device)
        return self._da

    def epilogue(self, sched: Schedule) -> None:
        """Sum each home token's k dX slots and the shared dX (fixed order) into dx, copy dw; NaN
        and (on_error="trap") a trapped launch if the pass failed."""
        lay = self.layer
        k = lay.topk
        _bwd_kernels()["epilogue"][(lay.vranks * lay.ns, -(-lay.H // lay.chunk))](
            self.shdx, self.dxs, self.dws, self.dx, self.dw, self.err, sched.overflow, lay.tok0,
            int(lay.has_shared), int(lay.cfg.on_error == "trap"), K=k,
            KP=max(2, 1 << (k - 1).bit_length()), H=lay.H, BH=lay.chunk, num_warps=4)

    def run(self, x_all: torch.Tensor, ids_all: torch.Tensor, w_all: torch.Tensor,
            dout_all: torch.Tensor, saved_gu: torch.Tensor | None = None) -> BackwardResult:
        """One backward pass. x_all, dout_all (P*N, H) bf16 (every rank's tokens and output
        gradients: peers' rows in local memory), ids_all (P*N, k), w_all (P*N, k) fp32 -> the
        gradients of this launch's ranks (BackwardResult). The forward layer's packed weights
        must be the ones of the pass (``MoKLayer.load_weights``). ``saved_gu``: with
        ``tiles.saved_gu``, the forward's g and u (``MoKLayer.saved_gu`` of a forward with
        ``KernelConfig(save_for_backward=True)`` on the same inputs); ValueError if missing,
        misshaped, or given without the option."""
        lay = self.layer
        self.check_saved(saved_gu)
        # the forward's shapes (any dtype and layout: converted below); the kernel reads rows
        # and routes by these counts, so others would misread or run out of bounds
        rows, k = lay.ep * lay.tokens, lay.topk
        for name, t, want in (("x_all", x_all, (rows, lay.H)), ("dout_all", dout_all, (rows, lay.H)),
                              ("ids_all", ids_all, (rows, k)), ("w_all", w_all, (rows, k))):
            if tuple(t.shape) != want:
                raise MokInputError(f"{name} {tuple(t.shape)}: {want} is required")
        sched = lay.schedule(ids_all)
        self.last_schedule = sched
        self.overflow_acc += sched.overflow
        x_all = x_all.to(torch.bfloat16).contiguous()
        dout_all = dout_all.to(torch.bfloat16).contiguous()
        self.launch(x_all, dout_all, w_all.float().contiguous().reshape(-1), sched, saved_gu)
        self.epilogue(sched)
        if lay.cfg.on_error == "raise":
            self.check()
        return self.result()

    def result(self) -> BackwardResult:
        """The last pass's gradients (BackwardResult)."""
        return BackwardResult(self.dx, self.dw, self.dwgu, self.dwd,
                              self.routed if self.tiles.w_direct else None)

    def check_saved(self, saved_gu: torch.Tensor | None) -> None:
        """ValueError unless ``saved_gu`` matches the option: None without tiles.saved_gu, else
        the (V*(NS + C), 2Ip) bf16 contiguous tensor a save_for_backward forward leaves."""
        lay = self.layer
        if not self.tiles.saved_gu:
            if saved_gu is not None:
                raise ValueError("saved_gu given but BackwardTiles.saved_gu is False")
            return
        want = (lay.vranks * (lay.ns + lay.capacity), 2 * lay.Ip)
        if saved_gu is None:
            raise ValueError("BackwardTiles(saved_gu=True) needs the forward's saved g and u: run "
                             "the forward with KernelConfig(save_for_backward=True) and pass "
                             "its MoKLayer.saved_gu")
        if (tuple(saved_gu.shape) != want or saved_gu.dtype != torch.bfloat16
                or not saved_gu.is_contiguous()):
            raise ValueError(f"saved_gu {tuple(saved_gu.shape)} {saved_gu.dtype}: expected a "
                             f"contiguous {want} bfloat16 tensor (MoKLayer.saved_gu)")

    def check(self) -> None:
        """Raise MegakernelStallError / CapacityOverflowError if the last pass failed (the weight
        gradients are set to NaN first, so a caught error leaves nothing usable)."""
        err = self.err.tolist()
        over = int(self.overflow_acc.item())
        if err[0] or over:
            for t in (self.dwgu, self.dwd, *(self.routed or ())):
                t.fill_(float("nan"))
        if err[0]:
            waits = [BWD_STALL_CODES[c].format(info=err[c]) for c in sorted(BWD_STALL_CODES)
                     if err[0] >> c & 1]
            self.err.zero_()
            raise MegakernelStallError("backward megakernel spin-wait timed out: "
                                       + "; then ".join(waits))
        if over:
            self.overflow_acc.zero_()
            raise CapacityOverflowError(
                f"schedule capacity overflow: {over} routed rows did not fit in the fixed capacity "
                f"of {self.layer.capacity} rows (multiplier {self.layer.cfg.capacity}) or named no "
                f"expert (an id outside [0, {self.layer.E}))")

    def weight_grads(self, res: BackwardResult | None = None) -> tuple[torch.Tensor, ...]:
        """Unpack the weight gradients: (dwg, dwu (V*EL, H, I), dwd (V*EL, I, H) of the served
        ranks' experts in global order, and dsg, dsu (H, I), dsd (I, H) of the shared expert
        summed over the served ranks in rank order, or None without a shared expert), float32;
        with w_direct the routed three are the pass's own tensors (BackwardResult.routed)."""
        lay = self.layer
        res = res or self.result()
        v, el, h, ip, i, bn = lay.vranks, lay.el, lay.H, lay.Ip, lay.I, lay.cfg.bn_gu
        slots = res.dwgu.shape[0] // v                 # el + 1, or 1 (w_direct: shared only)
        gu = res.dwgu.view(v, slots, h, ip // bn, 2, bn)
        dg = gu[:, :, :, :, 0].reshape(v, slots, h, ip)[..., :i]
        du = gu[:, :, :, :, 1].reshape(v, slots, h, ip)[..., :i]
        dd = res.dwd.view(v, slots, ip, h)[:, :, :i]
        if res.routed is not None:
            routed = list(res.routed)
        else:
            routed = [t[:, :el].reshape(v * el, *t.shape[2:]).contiguous() for t in (dg, du, dd)]
        if not lay.has_shared:
            return (*routed, None, None, None)
        shared = []
        for t in (dg, du, dd):
            acc = t[0, slots - 1].clone()
            for r in range(1, v):                      # fixed rank order
                acc += t[r, slots - 1]
            shared.append(acc)
        return (*routed, *shared)


def why_not_backward(layer: MoKLayer) -> str | None:
    """Why the backward megakernel cannot run a forward layer (None when it can)."""
    if layer.gluon is not None:
        return ("fp8_kernel='gluon' is forward only (the backward megakernel reads the Triton "
                "forward's buffers)")
    if layer.group is not None:
        return "group mode (real GPUs / LocalGroup) is not implemented in the backward megakernel"
    if not layer.cfg.fuse_gu:
        return "it reads the gate|up interleaved packing (fuse_gu=True)"
    return pointer_weight_refusal(layer.H, layer.Ip)   # it loads weights through pointers
