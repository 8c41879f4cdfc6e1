"""GPU-side dispatch schedule, built with tensor ops only (no host read-back on the forward path).

From the all-gathered top-k ids (P*N, k) the receiving rank lists the rows it will pull: every route
(source rank, source token, slot) whose expert it owns, grouped by local expert and, inside an
expert, in source order (rank, token, slot). Buffers have a fixed capacity
C = ceil(capacity_multiplier * P * N * min(k, E/P)) rows; if more rows arrive the surplus is not
scheduled and a device flag is raised; ``Schedule.check`` (called after the forward) turns the flag
into an error, so tokens are never dropped silently.

Rows are cut into GEMM tiles of at most ``block_m`` rows of one expert, and tiles into minibatches:
minibatch m holds the tiles whose first row lies in [m*minibatch, (m+1)*minibatch), so minibatch
boundaries fall on tile boundaries and a minibatch spans fewer than minibatch + block_m rows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch


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
    overflow: torch.Tensor     # (1,) int32 rows that did not fit (0 when all fit)

    @property
    def max_tiles(self) -> int:
        return int(self.tile_row0.numel())

    @property
    def max_minibatches(self) -> int:
        return int(self.mb_tile.numel()) - 1

    def check(self) -> None:
        """Raise CapacityOverflowError if rows overflowed the capacity (reads the device flag)."""
        over = int(self.overflow.item())
        if over:
            who = "some rank" if self.rank is None else f"rank {self.rank}"
            raise CapacityOverflowError(
                f"schedule capacity overflow: {over} routed rows to {who} did not fit in the "
                f"fixed capacity of {self.capacity} rows; raise the capacity multiplier")


def build_schedule(ids_all: torch.Tensor, *, ep: int, num_experts: int, rank: int | None,
                   capacity_multiplier: float, minibatch: int, block_m: int = 128) -> Schedule:
    """Build the schedule on ids_all's device from all-gathered top-k ids (P*N, k)."""
    pn, k = ids_all.shape
    if num_experts % ep or pn % ep:
        raise ValueError(f"E={num_experts} and P*N={pn} must be divisible by EP={ep}")
    if minibatch < 1 or block_m < 1:
        raise ValueError("minibatch and block_m must be >= 1")
    dev = ids_all.device
    n = pn // ep
    el = num_experts // ep
    cap_rank = capacity_rows(ep, n, k, num_experts, capacity_multiplier)
    if rank is None:
        e0, nloc, cap = 0, num_experts, ep * cap_rank
    else:
        e0, nloc, cap = rank * el, el, cap_rank
    f_all = pn * k
    i32 = torch.int32

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

    key = bucket * f_all + torch.arange(f_all, device=dev)   # unique: expert, then source order
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
