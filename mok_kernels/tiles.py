"""Tile choices of the forward megakernel per shape class, from the tile sweeps' records.

`group_m` (KernelConfig): gate/up tiles are taken in groups of row tiles, column by column, so
each weight column block is read from HBM once per group instead of once per row tile. It pays
where one row tile's gate/up weights (I / bn_gu column blocks of H x 2*bn_gu) are far larger than
L2. Measured (calibration/runs/h200-tiles/group_m.jsonl, `python -m mok_kernels.tile_sweep
--candidates m128-g128-d256-w8-s4,...-G4,...-G8,...-G16`, one H200, 2026-12-01): group_m 8 cut
the forward 17% on mixtral-8x7b (I 14336: 112 blocks) and 15% on llama4-maverick (I 8192: 64
blocks), and moved kimi-k2, glm-5, qwen3, gpt-oss and minimax-m2 (12-23 blocks) by 0-2.5%, within a
run's spread. So the rule groups only from WIDE_BLOCKS blocks up, and the records of narrower
shapes stay the kernel they describe. Pure Python (no torch): mok_model.records reads it too.
"""

from __future__ import annotations

GROUP_M = 8          # row tiles per group where grouping pays
WIDE_BLOCKS = 32     # gate/up column blocks from which it does (I >= 4096 at bn_gu 128)


def padded_width(expert_width: int, bn_gu: int = 128, block_k: int = 64) -> int:
    """I zero-padded to whole gate/up column blocks, as MoKLayer pads it."""
    step = max(bn_gu, block_k)
    return -(-int(expert_width) // step) * step


def forward_group_m(expert_width: int, bn_gu: int = 128, block_k: int = 64) -> int:
    """The group_m MoKLayer picks when KernelConfig.group_m is None."""
    return GROUP_M if padded_width(expert_width, bn_gu, block_k) // bn_gu >= WIDE_BLOCKS else 1
