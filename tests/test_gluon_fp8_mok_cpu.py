"""The Gluon FP8 MoK pass's work list (mok_kernels/gluon_fp8/mok.py), on the CPU: the host
twin of the kernel's item decode walks the same list as item_order, and every item's waits
point to earlier items (the pass's freedom from deadlock, with every program resident)."""

from __future__ import annotations

import pytest
import torch

from mok_kernels.gluon_fp8.mok import item_at, item_order, tile_minibatch, tile_minibatch_host
from mok_kernels.routing import make_routing
from mok_kernels.schedule import build_schedule


@pytest.mark.parametrize("ep, e, n, k, routing, minibatch, nsh, nbg, nbd", [
    (8, 16, 256, 8, "uniform", 512, 256, 16, 56),
    (8, 16, 192, 8, "zipf:1.2", 384, 192, 16, 48),
    (4, 8, 300, 2, "hot:0.3", 128, 0, 4, 8),
    (2, 4, 64, 1, "onehot", 4096, 64, 3, 5),
])
def test_item_list_and_decode_agree_and_waits_point_back(ep, e, n, k, routing, minibatch, nsh,
                                                         nbg, nbd):
    ids, _ = make_routing(ep * n, e, k, routing, seed=3)
    s = build_schedule(ids, ep=ep, num_experts=e, rank=0, capacity_multiplier=1.0,
                       minibatch=minibatch, block_m=128, use_triton=False)
    mb_tile, tiles = s.mb_tile.tolist(), int(s.num_tiles)
    order = item_order(nsh, mb_tile, tiles, nbg, nbd)
    assert [item_at(i, nsh, mb_tile, tiles, nbg, nbd, s.max_tiles)
            for i in range(len(order))] == order
    nt_s = -(-nsh // 128)
    assert len(order) == (nt_s + tiles) * (nbg + nbd) and len(set(order)) == len(order)
    last_gu = {}
    for i, (kind, u, _) in enumerate(order):
        if kind == "gu":
            last_gu[u] = i
        else:            # a down item waits for every gate/up item of its row tile
            assert u in last_gu and last_gu[u] < i
            assert sum(1 for kd, uu, _ in order[:i] if kd == "gu" and uu == u) == nbg
    t_idx = torch.arange(s.max_tiles, dtype=torch.int32)
    assert tile_minibatch(s.mb_tile, t_idx).tolist() == tile_minibatch_host(mb_tile, s.max_tiles)
