"""CPU tests of the backward megakernel's host side (backward.py): the unpacking of its weight
gradients from the packed layout, the per-expert tile table, and what it refuses. The kernel
itself is tested in tests/test_backward_gpu.py (CUDA, or the Triton interpreter)."""

from __future__ import annotations

import pytest
import torch

from mok_kernels import reference as ref
from mok_kernels.backward import MoKBackward, why_not_backward
from mok_kernels.megakernel import KernelConfig, MoKLayer
from mok_kernels.routing import make_routing


def layer(ep=4, rank=None, e=8, h=64, i=80, ishared=80, n=24, k=2, **cfg):
    w = ref.random_weights(e, h, i, ishared, seed=3)
    c = KernelConfig(dispatch="pull", combine="push", minibatch=32, comm_sms=2, macrobatch=64,
                     capacity=1.0, block_m=32, bn_gu=32, bn_dn=32, block_k=32, copy_rows=16, **cfg)
    return MoKLayer(w, ep, n, k, rank, c, device="cpu"), w


@pytest.mark.parametrize("rank,ishared", [(None, 80), (2, 80), (None, 0), (1, 0)])
def test_weight_grads_invert_the_packing(rank, ishared):
    """Packed weights fed through weight_grads come back as the layer's weights: routed experts of
    the served ranks in global order, I padding dropped, the shared expert summed over ranks."""
    lay, w = layer(rank=rank, ishared=ishared)
    bwd = MoKBackward(lay)
    assert lay.Ip == 96 and lay.I == 80                     # padded to whole 32-column blocks
    bwd.dwgu.copy_(lay.wg.float())
    bwd.dwd.copy_(lay.wd.float())
    dwg, dwu, dwd, dsg, dsu, dsd = bwd.weight_grads()
    bf = lambda t: t.to(torch.bfloat16).float()  # noqa: E731
    lo, hi = (0, 8) if rank is None else (rank * 2, rank * 2 + 2)
    assert torch.equal(dwg, bf(w.wg[lo:hi])) and torch.equal(dwu, bf(w.wu[lo:hi]))
    assert torch.equal(dwd, bf(w.wd[lo:hi]))
    if ishared:
        v = lay.vranks
        assert torch.equal(dsg, v * bf(w.sg)) and torch.equal(dsu, v * bf(w.su))
        assert torch.equal(dsd, v * bf(w.sd))
    else:
        assert dsg is None and dsu is None and dsd is None


@pytest.mark.parametrize("rank,routing", [(None, "zipf:1.5"), (3, "onehot"), (0, "uniform")])
def test_expert_tiles_match_the_schedule(rank, routing):
    lay, _ = layer(rank=rank)
    bwd = MoKBackward(lay)
    ids, _ = make_routing(4 * 24, 8, 2, routing, 0)
    sched = lay.schedule(ids)
    et = bwd.expert_tiles(sched)
    v = lay.vranks
    assert et.shape == (v, lay.el + 1)
    te = sched.tile_expert.reshape(v, -1)
    nt = sched.num_tiles.reshape(v)
    for r in range(v):
        assert int(et[r, -1]) == int(nt[r])
        for e in range(lay.el):
            assert (te[r, int(et[r, e]):int(et[r, e + 1])] == e).all()


def test_refused_layers():
    lay, _ = layer(fuse_gu=False, tma=False)
    assert "fuse_gu" in why_not_backward(lay)
    with pytest.raises(ValueError, match="fuse_gu"):
        MoKBackward(lay)
    assert why_not_backward(layer()[0]) is None
