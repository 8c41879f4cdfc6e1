"""mok_kernels/buffers.py: the formula the model's memory check reads is what MoKLayer allocates
(layers built on the CPU: an emulated rank, virtual ranks, pull combine, split_dn, FP8, a
LocalGroup rank's arena), and the tuner's check counts it (every rank's combine slots where the
peers are emulated in one GPU's memory; h over every row the rank may serve)."""

from __future__ import annotations

import pytest
import torch

from mok_kernels import reference as ref
from mok_kernels.buffers import layer_bytes
from mok_kernels.megakernel import KernelConfig, MoKLayer
from mok_kernels.peers import LocalGroup

PERSISTENT = ("hbuf", "h_s", "ring", "ring_s", "ystage", "comb", "sh_out", "out", "err", "sync",
              "overflow_acc", "split_ws")


def held_bytes(layer: MoKLayer, names, p: int, n: int, k: int) -> int:
    """Bytes of the layer's buffers `names` (None ones skipped) and of one forward's schedule."""
    tensors = [getattr(layer, a) for a in names]
    sched = layer.schedule(torch.zeros(p * n, k, dtype=torch.int64))
    tensors += [getattr(sched, f) for f in sched.__dataclass_fields__]
    return sum(t.numel() * t.element_size() for t in tensors if isinstance(t, torch.Tensor))


def formula(layer: MoKLayer, p: int, n: int, k: int, e: int, group: bool = False) -> int:
    cfg = layer.cfg
    return int(layer_bytes(ep=p, tokens=n, top_k=k, experts=e, hidden=layer.H,
                           width_padded=layer.Ip, capacity_rows=layer.capacity,
                           minibatch=cfg.minibatch, macrobatch=cfg.macrobatch,
                           pull_combine=cfg.combine == "pull", precision=cfg.precision,
                           group=group, ranks_served=layer.vranks, split=cfg.split_dn,
                           block_m=cfg.block_m, bn_dn=cfg.bn_dn))


KNOBS = dict(dispatch="pull", combine="push", minibatch=256, comm_sms=4, macrobatch=1024,
             capacity=0.5, tma=False)


@pytest.mark.parametrize("p,n,k,rank,extra", [
    (4, 200, 4, 1, {}),                                   # one rank emulated
    (4, 200, 4, None, {}),                                # every rank, virtual
    (8, 96, 2, 3, {"combine": "pull", "macrobatch": 300}),  # pull combine's staging rows
    (4, 64, 2, 1, {"split_dn": 4}),                       # split_dn's workspace
    (4, 160, 4, 2, {"precision": "fp8", "fuse_gu": True}),  # FP8 rows and scales
])
def test_the_formula_is_what_a_layer_allocates(p, n, k, rank, extra):
    e, h, i = 16, 384, 320
    w = ref.random_weights(e, h, i, i, seed=0)
    layer = MoKLayer(w, p, n, k, rank, KernelConfig(**{**KNOBS, **extra}), device="cpu")
    held = held_bytes(layer, (*PERSISTENT, "x_off", "comb_off"), p, n, k)
    want = formula(layer, p, n, k, e)
    # exact, but for a stacked schedule's overflow words (one, not one a rank)
    assert held - want == (-4 * (p - 1) if rank is None else 0), (held, want)


def test_a_group_ranks_arena_is_counted():
    """A LocalGroup rank (the group layout: its own combine slots, send rows and everyone's
    ids in its arena): the formula against the arena and the layer's other buffers."""
    p, n, k, e, h, i = 4, 128, 2, 16, 256, 256

    class Arenas(LocalGroup):                   # CPU: the arena's size only, no CUDA streams
        def __init__(self):
            self.size, self.device, self.arenas, self.streams, self.warm = p, "cpu", [], [], False

        def arena(self, rank, nbytes):
            self.nbytes = nbytes
            return torch.zeros(nbytes, dtype=torch.uint8), torch.zeros(p, dtype=torch.int64)

    group = Arenas()
    w = ref.random_weights(e, h, i, i, seed=0)
    layer = MoKLayer(w, p, n, k, 1, KernelConfig(**KNOBS), device="cpu", group=group)
    arena = group.nbytes
    others = held_bytes(layer, ("hbuf", "sh_out", "out", "err", "overflow_acc", "x_off", "p32",
                                "p64"), p, n, k)
    want = formula(layer, p, n, k, e, group=True)
    # the arena aligns each region to 256 bytes and holds a copy of the schedule's arrays
    assert 0 <= arena + others - want <= 256 * 16 + 4 * (2 * layer.capacity + 4 * layer.t_max + 8)
