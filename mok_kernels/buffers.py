"""What MoKLayer allocates, as a formula: the buffers' sizes the layer builds from, and their
bytes, so the model's memory check (`mok_model.tuner.buffer_bytes`) counts the kernel's own
buffers instead of a sketch of them. Pure Python and numpy-friendly (arrays of knobs broadcast):
the tuner scores whole knob grids with it. tests/test_buffers.py compares it with the tensors
of layers built on the CPU.

A rank's buffers (one GPU emulating ranks, or each GPU of a group):
- the ring of routed rows (`ring_rows` x H activations, FP8 with one fp32 scale per 128 columns);
- h, the SwiGLU activations of every row the rank may serve ((N + C) x I_padded: its N home
  tokens' shared expert and its C capacity rows);
- the combine slots (N x k x H bf16 for each rank whose home tokens this GPU holds: every
  rank's when peers are emulated in local memory, its own in a group) and pull combine's staging
  rows (C x H);
- the shared expert's output and the layer's output (N x H bf16 each), the schedule (int32
  arrays over the capacity rows and row tiles), the sync words, and split_dn's fp32 workspace;
- in a group also the send rows (N x H) and everyone's top-k ids (P x N x k int64).
Not counted: the weights (the model's, not MoK's), g / u kept for the backward
(save_for_backward: (N + C) x 2 I_padded bf16 a forward), Triton's and torch's temporaries.
"""

from __future__ import annotations

import numpy as np

from mok_model.errors import MokInputError, check_whole
from mok_model.scenario import PRECISIONS

SPLIT_WS_MAX_BYTES = 1 << 30   # split_dn's fp32 workspace per layer (MoKLayer refuses more)


def ring_rows(minibatch, macrobatch, capacity_rows, block_m: int = 128):
    """Rows of a rank's ring: the macrobatch, at least one minibatch and a row tile, at most the
    capacity rows and a row tile (every row the rank may receive)."""
    return np.minimum(np.maximum(macrobatch, minibatch + block_m), capacity_rows + block_m)


def stage_rows(capacity_rows, pull_combine):
    """Rows of pull combine's staging buffer (the capacity rows; one row for push combine)."""
    return np.where(pull_combine, capacity_rows, 1)


def max_tiles(capacity_rows, local_experts: int, block_m: int = 128):
    """Row tiles a rank's schedule lists at most (schedule.build_schedule's T_max)."""
    return (capacity_rows + block_m - 1) // block_m + local_experts


def max_minibatches(capacity_rows, minibatch):
    """Minibatches a rank's schedule lists at most (schedule.build_schedule's MB_max)."""
    return np.maximum(1, (capacity_rows + minibatch - 1) // minibatch)


def split_workspace_elements(ranks: int, tokens: int, tiles, hidden: int, split: int,
                             block_m: int = 128, bn_dn: int = 256):
    """fp32 elements of split_dn's workspace (0 at split 1): every home and routed row tile's
    down column blocks, `split` slices each."""
    if split <= 1:
        return 0
    row_tiles = (tokens + block_m - 1) // block_m + tiles
    return ranks * row_tiles * (-(-hidden // bn_dn)) * split * block_m * bn_dn


def layer_bytes(*, ep: int, tokens: int, top_k: int, experts: int, hidden: int,
                width_padded: int, capacity_rows, minibatch, macrobatch, pull_combine,
                precision: str = "bf16", group: bool = False, ranks_served: int = 1,
                split: int = 1, block_m: int = 128, bn_dn: int = 256):
    """Bytes MoKLayer allocates for its buffers (module docstring), per GPU. `group`: one rank a
    GPU (symmetric-memory arena); else one GPU with every rank's combine slots in local memory,
    serving `ranks_served` ranks in one launch (1: a rank emulated; EP: virtual ranks).
    `capacity_rows`, `minibatch`, `macrobatch` and `pull_combine` may be arrays (broadcast);
    the other sizes are integers >= 1 (MokInputError names one that is not: EP 0 divided by zero,
    a negative one gave negative bytes) and `precision` one of scenario.PRECISIONS (fp8: the FP8
    layer's one-byte rows with their scales; the others counted as BF16's: MoKLayer runs no
    mxfp8)."""
    check_whole(ep=ep, tokens=tokens, top_k=top_k, experts=experts, hidden=hidden,
                width_padded=width_padded, ranks_served=ranks_served, split=split,
                block_m=block_m, bn_dn=bn_dn)
    if precision not in PRECISIONS:
        raise MokInputError(f"precision {precision!r}: allowed {', '.join(PRECISIONS)}")
    p, n, k, h, v = ep, tokens, top_k, hidden, (1 if group else ranks_served)
    fp8 = precision == "fp8"
    act = 1 if fp8 else 2
    c = np.asarray(capacity_rows)
    ring = ring_rows(minibatch, macrobatch, c, block_m)
    t_max = max_tiles(c, experts // p, block_m)
    mb_max = max_minibatches(c, minibatch)
    ns_tiles = (n + block_m - 1) // block_m
    workspace = split_workspace_elements(v, n, t_max, h, split, block_m, bn_dn) * 4
    split_on = (split > 1) & (np.asarray(workspace) <= SPLIT_WS_MAX_BYTES)  # else the layer's 1
    sync_words = (mb_max * p + 2 * (mb_max + 1) + t_max + ns_tiles + 3
                  + (t_max + ns_tiles) * (-(-h // bn_dn)) * split_on)
    total = (v * (n + c) * width_padded * act                     # h
             + (v * (n + c) * (width_padded // 128) * 4 if fp8 else 0)
             + v * ring * h * act + (v * ring * (h // 128) * 4 if fp8 else 0)
             + v * stage_rows(c, pull_combine) * h * 2             # pull combine's staging rows
             + (1 if group else p) * n * k * h * 2                  # combine slots
             + 2 * v * n * h * 2                                    # shared output, output
             + v * sync_words * 4 + 16 * 4 + 4                      # sync, error words, overflow
             + np.where(split_on, workspace, 0)
             + v * schedule_bytes(c, t_max, mb_max, experts // p))
    if group:   # send rows, ids, flags; the peers' arena offsets in three units (int64 each)
        return total + n * h * 2 + p * n * k * 8 + (4 * p + 2) * 4 + 3 * p * 8
    return total + 2 * p * 8                 # the emulated peers' offset tables (int64)


def schedule_bytes(capacity_rows, t_max, mb_max, local_experts: int):
    """int32 bytes of one rank's schedule (schedule.Schedule's arrays)."""
    return 4 * (3 * capacity_rows + 3 * t_max + 2 * (mb_max + 1) + 2 * local_experts + 5)
