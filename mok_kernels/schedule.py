"""GPU-side dispatch schedule, built with tensor ops only (no host read-back on the forward path).

From the all-gathered top-k ids (P*N, k) the receiving rank lists the rows it will pull: every route
(source rank, source token, slot) whose expert it owns, grouped by local expert and, inside an
expert, in source order (rank, token, slot; rotated, from the rank after the receiving one).
Buffers have a fixed capacity C = ceil(capacity_multiplier * P * N * min(k, E/P)) rows; if more
rows arrive the surplus is not scheduled and a device flag is raised; ``Schedule.check`` (called
after the forward) turns the flag into an error, so tokens are never dropped silently.

Rows are cut into GEMM tiles of at most ``block_m`` rows of one expert, and tiles into minibatches:
minibatch m holds the tiles whose first row lies in [m*minibatch, (m+1)*minibatch), so minibatch
boundaries fall on tile boundaries and a minibatch spans fewer than minibatch + block_m rows.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import torch

from mok_model.errors import MokInputError

# The schedule's row arithmetic (its Triton kernels, the megakernels' minibatch bounds) is int32.
INT32_LIMIT = 2**31


def check_minibatch_rows(minibatch: int, capacity: int) -> None:
    """Refuse a minibatch whose sum with the capacity rows leaves int32: the fused schedule
    computes the minibatch count as (rows + minibatch - 1) // minibatch in int32, which wraps
    to zero minibatches (no routed row computed) past 2^31 - 1."""
    if minibatch + capacity >= INT32_LIMIT:
        raise MokInputError(
            f"minibatch={minibatch}: minibatch + capacity rows ({capacity}) must stay below 2^31 "
            f"(the schedule's int32 row arithmetic); any minibatch of {capacity} rows or more "
            f"runs the rows as one minibatch")


class CapacityOverflowError(RuntimeError):
    """More routed rows reached a rank than the fixed schedule capacity holds."""


def capacity_rows(ep: int, tokens: int, topk: int, num_experts: int, multiplier: float) -> int:
    """C = ceil(multiplier * P * N * min(k, E/P)): worst-case rows one rank's schedule holds."""
    return max(1, math.ceil(multiplier * ep * tokens * min(topk, num_experts // ep)))


@dataclass
class Schedule:
    """Dispatch schedule of one receiving rank (or of all ranks at once, ``rank is None``)."""

    ep: int
    tokens: int              # N: local tokens per rank
    topk: int
    rank: int | None         # None: P virtual ranks served in one launch
    expert_base: int         # first global expert id served
    num_local: int           # experts served
    capacity: int            # C rows
    block_m: int
    minibatch: int
    recv_src: torch.Tensor     # (C,) int32 source row in the gathered tokens (src_rank*N + token)
    recv_slot: torch.Tensor    # (C,) int32 combine slot (src_rank*N + token)*k + j
    recv_expert: torch.Tensor  # (C,) int32 local expert of each row, -1 past the end
    counts: torch.Tensor       # (num_local,) int32 rows that arrived per local expert
    offsets: torch.Tensor      # (num_local+1,) int32 first kept row of each expert
    total: torch.Tensor        # (1,) int32 rows kept (<= C)
    tile_expert: torch.Tensor  # (T_max,) int32 local expert of each tile
    tile_row0: torch.Tensor    # (T_max,) int32 first row of each tile (== total for unused tiles)
    tile_rows: torch.Tensor    # (T_max,) int32 rows in each tile (0 for unused tiles)
    num_tiles: torch.Tensor    # (1,) int32
    mb_tile: torch.Tensor      # (MB_max+1,) int32 first tile of each minibatch
    mb_row: torch.Tensor       # (MB_max+1,) int32 first row of each minibatch
    num_mb: torch.Tensor       # (1,) int32 minibatches in use
    overflow: torch.Tensor     # (1,) int32 rows that did not fit, plus routes naming no expert
                               # (ids outside [0, E)): 0 when every route is served

    @property
    def max_tiles(self) -> int:
        return int(self.tile_row0.shape[-1])

    @property
    def max_minibatches(self) -> int:
        return int(self.mb_tile.shape[-1]) - 1

    def check(self) -> None:
        """Raise CapacityOverflowError if rows overflowed the capacity (reads the device flag)."""
        over = int(self.overflow.item())
        if over:
            who = "some rank" if self.rank is None else f"rank {self.rank}"
            raise CapacityOverflowError(
                f"schedule capacity overflow: {over} routed rows to {who} did not fit in the "
                f"fixed capacity of {self.capacity} rows or named no expert (an id outside "
                f"[0, E)); raise the capacity multiplier, or check the router's ids")


def stack_schedules(scheds: list[Schedule]) -> Schedule:
    """Per-rank schedules of ranks 0..P-1 as one whose arrays are (P, ...), for P virtual ranks
    served by one launch (rank r's arrays at row r); ``overflow`` is the sum over the ranks."""
    first = scheds[0]
    kw = {}
    for f in dataclasses.fields(first):
        val = getattr(first, f.name)
        kw[f.name] = torch.stack([getattr(s, f.name) for s in scheds]) if isinstance(val, torch.Tensor) else val
    kw.update(rank=None, expert_base=0, num_local=first.num_local * len(scheds),
              overflow=kw["overflow"].sum().reshape(1).to(torch.int32))
    return Schedule(**kw)


def _span(ids_all: torch.Tensor, ep: int, num_experts: int, rank: int | None,
          capacity_multiplier: float) -> tuple[int, int, int, int, int, int, int, int]:
    """What one rank serves, or all P virtual ranks when rank is None:
    (P*N, k, N, experts per rank, first served expert, experts served, capacity rows, capacity
    rows per rank). ValueError names a shape that does not divide over the ranks."""
    pn, k = ids_all.shape
    if num_experts % ep or pn % ep:
        raise ValueError(f"E={num_experts} and P*N={pn} must be divisible by EP={ep}")
    n, el = pn // ep, num_experts // ep
    cap_rank = capacity_rows(ep, n, k, num_experts, capacity_multiplier)
    if rank is None:
        return pn, k, n, el, 0, num_experts, ep * cap_rank, cap_rank
    return pn, k, n, el, rank * el, el, cap_rank, cap_rank


def group_overflow(ids_all: torch.Tensor, *, ep: int, num_experts: int,
                   capacity_multiplier: float) -> torch.Tensor:
    """(1,) int32 on ids_all's device: the routed rows over capacity summed over EVERY rank of
    the group, from the exchanged ids (P*N, k). A rank's own schedule sees only its own
    overflow, but the rows another rank drops are this rank's tokens: its combine slots would
    keep stale values. Fixed-size tensor ops only (graph-capturable, no host read)."""
    *_, el, _, _, _, cap = _span(ids_all, ep, num_experts, 0, capacity_multiplier)
    flat = ids_all.reshape(-1).to(torch.int64)
    dst = torch.where((flat >= 0) & (flat < num_experts), flat // el, ep)  # ep: no rank's
    rows = torch.zeros(ep + 1, dtype=torch.int64, device=flat.device)
    rows.scatter_add_(0, dst, torch.ones_like(dst))
    # routes naming no expert (ids outside [0, E)) count too: no rank serves their slots
    return ((rows[:ep] - cap).clamp_min(0).sum() + rows[ep]).to(torch.int32).reshape(1)


def build_schedule(ids_all: torch.Tensor, *, ep: int, num_experts: int, rank: int | None,
                   capacity_multiplier: float, minibatch: int, block_m: int = 128,
                   use_triton: bool | None = None, rotated: bool = False) -> Schedule:
    """Build the schedule on ids_all's device from all-gathered top-k ids (P*N, k).

    On CUDA the fused Triton path (a few kernels plus one sort) is used unless use_triton=False;
    elsewhere (and as the checked fallback) plain tensor ops compute the same arrays.
    rotated: inside an expert the routes come in source order starting after the receiving rank
    (ranks rank+1, ..., P-1, 0, ..., rank), not at rank 0 (KernelConfig.source_order); one
    receiving rank only.
    """
    if minibatch < 1 or block_m < 1:
        raise ValueError("minibatch and block_m must be >= 1")
    span = _span(ids_all, ep, num_experts, rank, capacity_multiplier)
    check_minibatch_rows(minibatch, span[6])
    if rotated and rank is None:
        raise ValueError("rotated=True needs one receiving rank (rank=r): its sources start after it")
    if use_triton is None:
        use_triton = ids_all.is_cuda
    if use_triton:
        return _build_schedule_triton(ids_all, ep=ep, num_experts=num_experts, rank=rank,
                                      capacity_multiplier=capacity_multiplier,
                                      minibatch=minibatch, block_m=block_m, rotated=rotated)
    pn, k, n, el, e0, nloc, cap, cap_rank = span
    dev = ids_all.device
    f_all = pn * k
    i32 = torch.int32
    shift = _shift(rank, n, k, f_all, rotated)

    ids = ids_all.reshape(-1).long()                       # (F,) route f = src_row*k + j
    le = ids - e0
    local = (le >= 0) & (le < nloc)
    bucket = torch.where(local, le, torch.full_like(le, nloc))   # non-local routes -> dump bucket
    counts_all = torch.zeros(nloc + 1, dtype=torch.int64, device=dev)
    counts_all.scatter_add_(0, bucket, torch.ones_like(bucket))
    counts = counts_all[:nloc]                              # (nloc,)
    total_in = counts.sum()
    if rank is None:   # per-rank capacity of each virtual rank
        per_rank = counts.view(ep, el).sum(1)
        over = (per_rank - cap_rank).clamp_min(0).sum()
    else:
        over = (total_in - cap).clamp_min(0)
    over = over + ((ids < 0) | (ids >= num_experts)).sum()   # routes naming no expert

    # unique: expert, then source order (rotated: starting at route `shift`, source rank + 1)
    key = bucket * f_all + (torch.arange(f_all, device=dev) - shift) % f_all
    order = torch.sort(key).indices                           # (F,)
    if cap <= f_all:
        sel = order[:cap]
    else:
        sel = torch.cat([order, torch.zeros(cap - f_all, dtype=order.dtype, device=dev)])
    total = total_in.clamp(max=cap)
    pos = torch.arange(cap, device=dev)
    valid = pos < total
    recv_slot = torch.where(valid, sel, 0).to(i32)
    recv_src = torch.where(valid, sel // k, 0).to(i32)
    recv_expert = torch.where(valid, bucket[sel], -1).to(i32)

    cum = torch.cumsum(counts, 0)
    start = cum - counts
    kept = cum.clamp(max=cap) - start.clamp(max=cap)          # rows kept per expert
    zero = torch.zeros(1, dtype=cum.dtype, device=dev)
    offsets = torch.cat([zero, cum.clamp(max=cap)])           # (nloc+1,)

    ntile = (kept + block_m - 1) // block_m
    tcum = torch.cumsum(ntile, 0)
    tstart = tcum - ntile
    t_max = (cap + block_m - 1) // block_m + nloc
    t = torch.arange(t_max, device=dev)
    num_tiles = tcum[-1]
    te = torch.searchsorted(tcum, t, right=True).clamp(max=nloc - 1)
    j = t - tstart[te]
    tvalid = t < num_tiles
    row0 = torch.where(tvalid, offsets[te] + j * block_m, total)
    trows = torch.where(tvalid, (kept[te] - j * block_m).clamp(0, block_m), 0)
    te = torch.where(tvalid, te, 0)

    mb_max = max(1, (cap + minibatch - 1) // minibatch)
    m = torch.arange(mb_max + 1, device=dev)
    mb_tile = torch.searchsorted(row0.contiguous(), m * minibatch)   # first tile with row0 >= m*MB
    mb_tile = torch.minimum(mb_tile, num_tiles)
    mb_row = torch.cat([row0, total.reshape(1)])[mb_tile]
    num_mb = (total + minibatch - 1) // minibatch

    return Schedule(
        ep=ep, tokens=n, topk=k, rank=rank, expert_base=e0, num_local=nloc, capacity=cap,
        block_m=block_m, minibatch=minibatch, recv_src=recv_src, recv_slot=recv_slot,
        recv_expert=recv_expert, counts=counts.to(i32), offsets=offsets.to(i32),
        total=total.reshape(1).to(i32), tile_expert=te.to(i32), tile_row0=row0.to(i32),
        tile_rows=trows.to(i32), num_tiles=num_tiles.reshape(1).to(i32), mb_tile=mb_tile.to(i32),
        mb_row=mb_row.to(i32), num_mb=num_mb.reshape(1).to(i32), overflow=over.reshape(1).to(i32))


def _shift(rank: int | None, n: int, k: int, f_all: int, rotated: bool) -> int:
    """The first route of the rotated source order: rank + 1's first (0 unrotated)."""
    return ((rank + 1) * n * k) % f_all if rotated else 0


_SK: dict = {}


def _sched_kernels() -> dict:
    """Triton kernels of the fused schedule builder (Triton imported lazily)."""
    if _SK:
        return _SK
    import triton
    import triton.language as tl

    @triton.jit
    def hist_kernel(ids_ptr, bh_ptr, bs_ptr, cnt_ptr, bad_ptr, F, e0, nloc, E, SHIFT,
                    NBIN: tl.constexpr, BLK: tl.constexpr):
        """Per block of BLK routes (in source order from route SHIFT): bucket histogram (bucket =
        local expert, nloc for others) and its exclusive prefix; global bucket counts by atomics;
        routes naming no expert (ids outside [0, E)) counted at bad_ptr."""
        b = tl.program_id(0)
        f = b * BLK + tl.arange(0, BLK)
        m = f < F
        ids = tl.load(ids_ptr + (f + SHIFT) % F, mask=m, other=0)
        nbad = tl.sum((m & ((ids < 0) | (ids >= E))).to(tl.int32))
        tl.atomic_add(bad_ptr, nbad, mask=nbad > 0, sem="relaxed")
        le = ids.to(tl.int32) - e0
        bucket = tl.where((le >= 0) & (le < nloc), le, nloc)
        hist = tl.histogram(tl.where(m, bucket, NBIN - 1), NBIN)
        bins = tl.arange(0, NBIN)
        tl.store(bh_ptr + b * NBIN + bins, hist)
        tl.store(bs_ptr + b * NBIN + bins, tl.cumsum(hist, 0) - hist)
        tl.atomic_add(cnt_ptr + bins, hist, mask=(bins <= nloc) & (hist > 0), sem="relaxed")

    @triton.jit
    def scan_part(pid, bh_ptr, cnt_ptr, base_ptr, src_ptr, slot_ptr, exp_ptr, NB, C, nloc,
                  NBE: tl.constexpr, NBIN: tl.constexpr, BB: tl.constexpr, BLK: tl.constexpr):
        """Program e < nloc: first row of expert e's routes in each block (expert start plus the
        earlier blocks' counts). Later programs: rows past the kept total get empty entries."""
        e = tl.arange(0, NBE)
        cnt = tl.load(cnt_ptr + e, mask=e < nloc, other=0)
        if pid < nloc:
            carry = tl.sum(tl.where(e < pid, cnt, 0))
            for c0 in range(0, NB, BB):
                j = c0 + tl.arange(0, BB)
                v = tl.load(bh_ptr + j * NBIN + pid, mask=j < NB, other=0)
                tl.store(base_ptr + j * NBIN + pid, carry + tl.cumsum(v, 0) - v, mask=j < NB)
                carry += tl.sum(v)
        else:
            total = tl.minimum(tl.sum(cnt), C)
            pos = (pid - nloc) * BLK + tl.arange(0, BLK)
            m = (pos >= total) & (pos < C)
            tl.store(slot_ptr + pos, pos * 0, mask=m)
            tl.store(src_ptr + pos, pos * 0, mask=m)
            tl.store(exp_ptr + pos, pos * 0 - 1, mask=m)

    @triton.jit
    def place_part(b, ids_ptr, bs_ptr, base_ptr, src_ptr, slot_ptr, exp_ptr, F, C, K, e0, nloc,
                   SHIFT, NBIN: tl.constexpr, BLK: tl.constexpr):
        """Stable counting sort, last step: block b orders its routes by bucket (in-block sort
        of bucket*BLK + lane) and writes every kept local route to its row (routes in source
        order from route SHIFT, as hist_kernel read them)."""
        lane = tl.arange(0, BLK)
        f = b * BLK + lane
        m = f < F
        le = tl.load(ids_ptr + (f + SHIFT) % F, mask=m, other=0).to(tl.int32) - e0
        bucket = tl.where((le >= 0) & (le < nloc), le, nloc)
        key = tl.sort(tl.where(m, bucket, NBIN - 1) * BLK + lane, 0)
        sb = key // BLK
        fr = (b * BLK + key % BLK + SHIFT) % F
        local = sb < nloc
        start = tl.load(bs_ptr + b * NBIN + sb, mask=local, other=0)
        pos = tl.load(base_ptr + b * NBIN + sb, mask=local, other=0) + lane - start
        keep = local & (pos < C)
        tl.store(slot_ptr + pos, fr, mask=keep)
        tl.store(src_ptr + pos, fr // K, mask=keep)
        tl.store(exp_ptr + pos, sb, mask=keep)

    @triton.jit
    def tiles_part(pid, cnt_ptr, te_ptr, tr0_ptr, trows_ptr, off_ptr, C, nloc, T_MAX,
                   NBE: tl.constexpr, BM: tl.constexpr, BT: tl.constexpr):
        """Program e < nloc writes expert e's tiles; later programs fill unused tiles."""
        e = tl.arange(0, NBE)
        em = e < nloc
        cnt = tl.load(cnt_ptr + e, mask=em, other=0)
        cum = tl.cumsum(cnt, 0)
        start = cum - cnt
        kept = tl.minimum(cum, C) - tl.minimum(start, C)
        ntile = (kept + BM - 1) // BM
        tcum = tl.cumsum(ntile, 0)
        num_tiles = tl.sum(ntile)
        total = tl.minimum(tl.sum(cnt), C)
        if pid < nloc:
            sel = e == pid
            my_off = tl.sum(tl.where(sel, tl.minimum(start, C), 0))
            my_kept = tl.sum(tl.where(sel, kept, 0))
            my_nt = tl.sum(tl.where(sel, ntile, 0))
            my_t0 = tl.sum(tl.where(sel, tcum - ntile, 0))
            tl.store(off_ptr + pid, my_off)
            if pid == nloc - 1:
                tl.store(off_ptr + nloc, total)
            j0 = 0
            while j0 < my_nt:
                j = j0 + tl.arange(0, BT)
                mj = j < my_nt
                tl.store(te_ptr + my_t0 + j, pid + j * 0, mask=mj)
                tl.store(tr0_ptr + my_t0 + j, my_off + j * BM, mask=mj)
                tl.store(trows_ptr + my_t0 + j, tl.minimum(my_kept - j * BM, BM), mask=mj)
                j0 += BT
        else:
            t = (pid - nloc) * BT + tl.arange(0, BT)
            mt = (t >= num_tiles) & (t < T_MAX)
            tl.store(te_ptr + t, t * 0, mask=mt)
            tl.store(tr0_ptr + t, t * 0 + total, mask=mt)
            tl.store(trows_ptr + t, t * 0, mask=mt)

    @triton.jit
    def mb_part(pid, cnt_ptr, tr0_ptr, mbt_ptr, mbr_ptr, scal_ptr, C, nloc, T_MAX, MB_MAX, MB,
                P, EL, CAP_RANK, PER_RANK, NBE: tl.constexpr, BM: tl.constexpr,
                LOG2T: tl.constexpr, BLK: tl.constexpr):
        """Minibatch boundaries by binary search over tile starts; scalars by program 0."""
        e = tl.arange(0, NBE)
        em = e < nloc
        cnt = tl.load(cnt_ptr + e, mask=em, other=0)
        cum = tl.cumsum(cnt, 0)
        kept = tl.minimum(cum, C) - tl.minimum(cum - cnt, C)
        num_tiles = tl.sum((kept + BM - 1) // BM)
        total_in = tl.sum(cnt)
        total = tl.minimum(total_in, C)
        m = pid * BLK + tl.arange(0, BLK)
        mm = m <= MB_MAX
        target = m * MB
        lo = m * 0
        hi = m * 0 + T_MAX
        for _ in tl.static_range(LOG2T):     # lower_bound(tile_row0, m * MB)
            mid = (lo + hi) // 2
            active = lo < hi
            v = tl.load(tr0_ptr + mid, mask=active & (mid < T_MAX), other=0)
            less = v < target
            new_lo = tl.where(active & less, mid + 1, lo)
            hi = tl.where(active & (~less), mid, hi)
            lo = new_lo
        first = tl.minimum(lo, num_tiles)
        tl.store(mbt_ptr + m, first, mask=mm)
        r = tl.load(tr0_ptr + first, mask=mm & (first < T_MAX), other=0)
        tl.store(mbr_ptr + m, tl.where(first < T_MAX, r, total), mask=mm)
        if pid == 0:
            if PER_RANK != 0:
                over = total_in * 0
                q = 0
                while q < P:
                    rq = tl.sum(tl.where((e >= q * EL) & (e < (q + 1) * EL), cnt, 0))
                    over += tl.maximum(rq - CAP_RANK, 0)
                    q += 1
            else:
                over = tl.maximum(total_in - C, 0)
            over += tl.load(scal_ptr + 4)        # routes naming no expert (hist_kernel)
            tl.store(scal_ptr + 0, total)
            tl.store(scal_ptr + 1, num_tiles)
            tl.store(scal_ptr + 2, (total + MB - 1) // MB)
            tl.store(scal_ptr + 3, over)

    @triton.jit
    def plan_kernel(bh_ptr, cnt_ptr, base_ptr, src_ptr, slot_ptr, exp_ptr, te_ptr, tr0_ptr,
                    trows_ptr, off_ptr, NB, C, nloc, T_MAX, N_SCAN, NBE: tl.constexpr,
                    NBIN: tl.constexpr, BB: tl.constexpr, BLK: tl.constexpr, BM: tl.constexpr,
                    BT: tl.constexpr):
        """What needs only the counts, in one launch: programs below N_SCAN scan the blocks'
        counts (scan_part), the others write the tiles (tiles_part)."""
        pid = tl.program_id(0)
        if pid < N_SCAN:
            scan_part(pid, bh_ptr, cnt_ptr, base_ptr, src_ptr, slot_ptr, exp_ptr, NB, C, nloc,
                      NBE, NBIN, BB, BLK)
        else:
            tiles_part(pid - N_SCAN, cnt_ptr, te_ptr, tr0_ptr, trows_ptr, off_ptr, C, nloc,
                       T_MAX, NBE, BM, BT)

    @triton.jit
    def place_mb_kernel(ids_ptr, bs_ptr, base_ptr, src_ptr, slot_ptr, exp_ptr, cnt_ptr, tr0_ptr,
                        mbt_ptr, mbr_ptr, scal_ptr, F, C, K, e0, nloc, T_MAX, MB_MAX, MB, P, EL,
                        CAP_RANK, PER_RANK, NB, SHIFT, NBE: tl.constexpr, NBIN: tl.constexpr,
                        BLK: tl.constexpr, BM: tl.constexpr, LOG2T: tl.constexpr,
                        BLK_MB: tl.constexpr):
        """What needs the scan and the tiles, in one launch: programs below NB place their
        block's routes (place_part), the others find the minibatch boundaries (mb_part)."""
        pid = tl.program_id(0)
        if pid < NB:
            place_part(pid, ids_ptr, bs_ptr, base_ptr, src_ptr, slot_ptr, exp_ptr, F, C, K, e0,
                       nloc, SHIFT, NBIN, BLK)
        else:
            mb_part(pid - NB, cnt_ptr, tr0_ptr, mbt_ptr, mbr_ptr, scal_ptr, C, nloc, T_MAX,
                    MB_MAX, MB, P, EL, CAP_RANK, PER_RANK, NBE, BM, LOG2T, BLK_MB)

    _SK.update(hist=hist_kernel, plan=plan_kernel, place_mb=place_mb_kernel)
    return _SK


def _build_schedule_triton(ids_all: torch.Tensor, *, ep: int, num_experts: int, rank: int | None,
                           capacity_multiplier: float, minibatch: int, block_m: int,
                           rotated: bool = False) -> Schedule:
    """Fused CUDA path of build_schedule: same arrays from a memset and 3 Triton launches (a
    stable counting sort of the routes by local expert: counts, then the scan beside the tiles,
    then the placing beside the minibatches) instead of ~60 tensor ops."""
    ks = _sched_kernels()
    pn, k, n, el, e0, nloc, cap, cap_rank = _span(ids_all, ep, num_experts, rank, capacity_multiplier)
    dev, i32 = ids_all.device, torch.int32
    f_all = pn * k
    nbe = max(16, 1 << (nloc - 1).bit_length())
    nbin = max(16, 1 << (nloc + 1).bit_length())
    t_max = (cap + block_m - 1) // block_m + nloc
    mb_max = max(1, (cap + minibatch - 1) // minibatch)
    ints = torch.zeros(nloc + 1 + 5, dtype=i32, device=dev)    # counts (+dump), scalars, bad ids
    counts_all, scal = ints[:nloc + 1], ints[nloc + 1:]
    blk = 512
    nb = triton_cdiv(f_all, blk)
    ids_flat = ids_all.reshape(-1)
    scratch = torch.empty(3, nb * nbin, dtype=i32, device=dev)   # block hist, its prefix, bases
    shift = _shift(rank, n, k, f_all, rotated)
    ks["hist"][(nb,)](ids_flat, scratch[0], scratch[1], counts_all, scal[4:], f_all, e0, nloc,
                      num_experts, shift, NBIN=nbin, BLK=blk, num_warps=4)
    recv = torch.empty(3, cap, dtype=i32, device=dev)
    tiles = torch.empty(3, t_max, dtype=i32, device=dev)
    offsets = torch.empty(nloc + 1, dtype=i32, device=dev)
    bt = 128
    n_scan = nloc + triton_cdiv(cap, blk)
    ks["plan"][(n_scan + nloc + triton_cdiv(t_max, bt),)](
        scratch[0], counts_all, scratch[2], recv[0], recv[1], recv[2], tiles[0], tiles[1],
        tiles[2], offsets, nb, cap, nloc, t_max, n_scan, NBE=nbe, NBIN=nbin, BB=1024, BLK=blk,
        BM=block_m, BT=bt, num_warps=4)
    mbs = torch.empty(2, mb_max + 1, dtype=i32, device=dev)
    blk_mb = 256
    ks["place_mb"][(nb + triton_cdiv(mb_max + 1, blk_mb),)](
        ids_flat, scratch[1], scratch[2], recv[0], recv[1], recv[2], counts_all, tiles[1], mbs[0],
        mbs[1], scal, f_all, cap, k, e0, nloc, t_max, mb_max, minibatch, ep, el, cap_rank,
        int(rank is None), nb, shift, NBE=nbe, NBIN=nbin, BLK=blk, BM=block_m,
        LOG2T=max(1, t_max.bit_length()), BLK_MB=blk_mb, num_warps=4)
    return Schedule(
        ep=ep, tokens=n, topk=k, rank=rank, expert_base=e0, num_local=nloc, capacity=cap,
        block_m=block_m, minibatch=minibatch, recv_src=recv[0], recv_slot=recv[1],
        recv_expert=recv[2], counts=counts_all[:nloc], offsets=offsets, total=scal[0:1],
        tile_expert=tiles[0], tile_row0=tiles[1], tile_rows=tiles[2], num_tiles=scal[1:2],
        mb_tile=mbs[0], mb_row=mbs[1], num_mb=scal[2:3], overflow=scal[3:4])


def triton_cdiv(a: int, b: int) -> int:
    return (a + b - 1) // b
