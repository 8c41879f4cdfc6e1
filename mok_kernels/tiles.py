"""Tile choices of the forward megakernel per shape class, from the tile sweeps' records.

`group_m` (KernelConfig): gate/up tiles are taken in groups of row tiles, column by column, so
each weight column block is read from HBM once per group instead of once per row tile. It pays
where one row tile's gate/up weights (I / bn_gu column blocks of H x 2*bn_gu) are far larger than
L2. Measured (calibration/runs/h200-tiles/group_m.jsonl, `python -m mok_kernels.tile_sweep
--candidates m128-g128-d256-w8-s4,...-G4,...-G8,...-G16`, one H200, 2026-12-01): group_m 8 cut
the forward 17% on mixtral-8x7b (I 14336: 112 blocks) and 15% on llama4-maverick (I 8192: 64
blocks), and moved kimi-k2, glm-5, qwen3, gpt-oss and minimax-m2 (12-23 blocks) by 0-2.5%, within a
run's spread. So the rule grouped only from WIDE_BLOCKS blocks up. Session 53 found shapes under
that many blocks whose row tile's gate/up weights are still twice the L2: two drawn shapes
(H 6912 / I 3712 and H 7424 / I 3456, 29 and 27 blocks, 98 MiB) ran their GEMM phases 1.23-1.53x
the library's on an H100, and group_m 8 cut their forward 10-13% on the H100 and 6% on an H200
(calibration/runs/h100-tiles/group_ab_s53.jsonl, h200-tiles/group_ab_s53.jsonl,
`benchmarks/device/s53_group_ab.sh`). So the rule also groups from L2_SPILL_MIB of gate/up weights
a row tile up (no preset changes: the widest ungrouped, kimi-k2 and deepseek-v3, hold 56 MiB;
on the H100 group_m 8 cut kimi-k2 4.8% and glm-5 3.1%, on the H200 kimi-k2 0.8%: left as they
are while their GEMM tables are measured row tile by row tile). The records of other shapes stay
the kernel they describe. Pure Python (no torch): mok_model.records reads it too.
"""

from __future__ import annotations


from mok_model.errors import MokInputError, check_whole, is_whole
from mok_model.scenario import PRECISIONS


def _precision(precision: object) -> None:
    """Refuse (MokInputError) a precision the model does not name (scenario.PRECISIONS): the
    choosers below split only BF16, and 'BF16' or 'fp16' silently ran as another."""
    if precision not in PRECISIONS:
        raise MokInputError(f"precision {precision!r}: allowed {', '.join(PRECISIONS)}")


GROUP_M = 8          # row tiles per group where grouping pays
WIDE_BLOCKS = 32     # gate/up column blocks from which it does (I >= 4096 at bn_gu 128)
L2_SPILL_MIB = 64    # or gate/up weights of one row tile (BF16 H x 2I) from which it does


def padded_width(expert_width: int, bn_gu: int = 128, block_k: int = 64) -> int:
    """I zero-padded to whole gate/up column blocks, as MoKLayer pads it."""
    check_whole(expert_width=expert_width, bn_gu=bn_gu, block_k=block_k)
    step = max(bn_gu, block_k)
    return -(-int(expert_width) // step) * step


def shape_refusal(h: int, i: int, ishared: int, block_k: int) -> str | None:
    """Why the megakernel cannot run hidden size ``h``, expert width ``i`` and shared width
    ``ishared`` (all shared experts together) at K step ``block_k`` (KernelConfig: 64 BF16, 128
    FP8), or None: the shared experts run as one expert as wide as a routed one, and the gate/up
    GEMM steps through H in whole K blocks. MoKLayer refuses it; mok bench names it before its
    GPU check."""
    for name, v, low in (("H", h, 1), ("I", i, 1), ("shared width", ishared, 0), ("block_k", block_k, 1)):
        if not is_whole(v, low):
            return f"{name}={v!r}: the megakernel needs an integer >= {low}"
    if ishared not in (0, i):
        return (f"megakernel needs shared width 0 or {i}, got {ishared} (all shared experts "
                f"together run as one expert of the expert width)")
    if h % block_k:
        return (f"hidden size H={h} is not a multiple of {block_k} (block_k, the gate/up GEMM's K "
                f"step); the megakernel runs H = {block_k}*n")
    return None


def forward_group_m(expert_width: int, hidden: int, bn_gu: int = 128, block_k: int = 64) -> int:
    """The group_m MoKLayer picks when KernelConfig.group_m is None: GROUP_M for wide experts
    (WIDE_BLOCKS column blocks) or a row tile's gate/up weights of L2_SPILL_MIB, else 1."""
    check_whole(hidden=hidden)
    width = padded_width(expert_width, bn_gu, block_k)
    weights_mib = int(hidden) * 2 * width * 2 / 2**20
    return GROUP_M if width // bn_gu >= WIDE_BLOCKS or weights_mib >= L2_SPILL_MIB else 1


# split_dn (KernelConfig): the down GEMM's K loop in slices where a rank's down phase has few work
# items. Measured (calibration/runs/h200-tiles/split_dn_decode.jsonl, `python -m
# mok_kernels.tile_sweep --candidates ...,-k2,-k4,-k8`, one H200, 2026-12-01): split_dn 4 cut the
# forward 36-43% on mixtral-8x7b (I 14336) at EP 8 with 64 and 128 tokens and EP 4 with 64 tokens
# (16-32 expected down items), and lost 1-7% from 64 items (256 tokens); on I <= 2880 (gpt-oss,
# qwen3, minimax) 4 slices lost 12-45% even at 32-64 items (short K loops), llama4 (80 items) lost
# 4%. So the rule splits only long K loops with at most FEW_DOWN_ITEMS expected items.
SPLIT_DN = 4           # K slices where splitting pays
FEW_DOWN_ITEMS = 32    # expected down work items (row tiles x column blocks) up to which it does
LONG_K = 4096          # expert width (the down GEMM's K) from which it does


def expected_row_tiles(tokens: int, top_k: int, experts: int, ep: int, block_m: int = 128) -> int:
    """Row tiles one rank's routed experts make under uniform routing: tokens x top_k rows
    (the EP group's tokens x top_k spread over P ranks) over its experts, whole tiles each."""
    check_whole(tokens=tokens, top_k=top_k, experts=experts, ep=ep, block_m=block_m)
    rows, local = tokens * top_k, max(experts // ep, 1)
    if rows <= local:
        return rows                     # at most one row per expert: one tile each
    return local * -(-rows // (local * block_m))


def forward_split_dn(tokens: int, top_k: int, experts: int, ep: int, hidden: int,
                     expert_width: int, block_m: int = 128, bn_dn: int = 256,
                     precision: str = "bf16") -> int:
    """The split_dn MoKLayer picks when KernelConfig.split_dn is None (one GPU; group mode and
    FP8 run 1): SPLIT_DN for long K loops whose down phase has few expected items, else 1."""
    check_whole(tokens=tokens, top_k=top_k, experts=experts, ep=ep, hidden=hidden,
            expert_width=expert_width, block_m=block_m, bn_dn=bn_dn)
    _precision(precision)
    if precision != "bf16" or expert_width < LONG_K:
        return 1
    items = expected_row_tiles(tokens, top_k, experts, ep, block_m) * -(-hidden // bn_dn)
    return SPLIT_DN if items <= FEW_DOWN_ITEMS else 1


# dn_blocks (KernelConfig): a down work item walks several column blocks of its row tile in one
# flattened K loop, so the next block's first loads are in flight while this block stores; a
# short K loop (narrow experts) otherwise pays its pipeline's fill and its store alone. Measured
# (benchmarks/device/s42_blocks.py, mok_kernels/logs_s42/s42a-b, one H200, 2026-12-04, pull /
# push, 32 comm SMs, the pass against one block an item): qwen3-30b-a3b (12 K steps) EP 8 / 32 at
# 4,096 tokens 0.91-0.93 at 4 blocks, 0.96-0.99 at 6-8; at 1,024 tokens 0.97 at 2 blocks, 1.04
# at 4 and 1.17 at 8 (64 row tiles: too few items for the SMs); qwen3-next-80b-a3b (8 steps)
# 0.92 at 4; qwen3-235b-a22b, glm-4.5 and minimax-m2 (24 steps) 0.95-0.99 at 2; 32-step shapes
# (kimi-k2, glm-5) 0.95-1.03 at 2 and kimi-k2 1.03 at 4. So the rule doubles the blocks while an
# item stays within DOWN_K_STEPS K steps and the down items still outnumber the SMs.
DOWN_K_STEPS = 48      # K steps (of block_k) a down item walks at most: 3,072 columns at 64


def forward_dn_blocks(tokens: int, top_k: int, experts: int, ep: int, hidden: int,
                      expert_width: int, sms: int, block_m: int = 128, bn_dn: int = 256,
                      block_k: int = 64, bn_gu: int = 128, precision: str = "bf16",
                      split_dn: int = 1) -> int:
    """The dn_blocks MoKLayer picks when KernelConfig.dn_blocks is None (BF16 on one GPU; group
    mode, FP8 and split_dn > 1 run 1): the largest power of two d with d x (the padded width's K
    steps) <= DOWN_K_STEPS, d <= the down column blocks, and the expected down items
    (row tiles x ceil(blocks / d), uniform routing) at least `sms`."""
    check_whole(tokens=tokens, top_k=top_k, experts=experts, ep=ep, hidden=hidden,
            expert_width=expert_width, sms=sms, block_m=block_m, bn_dn=bn_dn, block_k=block_k,
            bn_gu=bn_gu, split_dn=split_dn)
    _precision(precision)
    if precision != "bf16" or split_dn > 1:
        return 1
    steps = padded_width(expert_width, bn_gu, block_k) // block_k
    blocks = -(-hidden // bn_dn)
    tiles = expected_row_tiles(tokens, top_k, experts, ep, block_m)
    d = 1
    while (2 * d * steps <= DOWN_K_STEPS and 2 * d <= blocks
           and tiles * -(-blocks // (2 * d)) >= sms):
        d *= 2
    return d
