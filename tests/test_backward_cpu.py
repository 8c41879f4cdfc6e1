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


@pytest.mark.parametrize("rank", [None, 2])
def test_weight_grads_with_direct_routed_gradients(rank):
    """w_direct: the packed buffers keep one (shared-expert) slot a rank, weight_grads sums those
    over the ranks in order and hands the pass's routed tensors over as they are; w_bf16 alone
    is refused."""
    from mok_kernels.backward import BackwardResult, parse_tiles
    lay, w = layer(rank=rank)
    bwd = MoKBackward(lay, parse_tiles("w_direct=1,w_bf16=1"))
    v, el = lay.vranks, lay.el
    assert bwd.dwgu.shape[0] == v and bwd.dwd.shape[0] == v
    packed = lay.wg.view(v, el + 1, *lay.wg.shape[1:])[:, el].float()
    bwd.dwgu.copy_(packed)
    bwd.dwd.copy_(lay.wd.view(v, el + 1, *lay.wd.shape[1:])[:, el].float())
    routed = bwd.new_routed()
    assert all(t.dtype == torch.bfloat16 for t in routed)
    assert routed[0].shape == (v * el, 64, 80) and routed[2].shape == (v * el, 80, 64)
    res = BackwardResult(bwd.dx, bwd.dw, bwd.dwgu, bwd.dwd, routed)
    dwg, dwu, dwd, dsg, dsu, dsd = bwd.weight_grads(res)
    assert dwg is routed[0] and dwu is routed[1] and dwd is routed[2]
    bf = lambda t: t.to(torch.bfloat16).float()  # noqa: E731
    assert torch.equal(dsg, v * bf(w.sg)) and torch.equal(dsu, v * bf(w.su))
    assert torch.equal(dsd, v * bf(w.sd))
    with pytest.raises(ValueError, match="w_bf16=1 needs w_direct=1"):
        MoKBackward(lay, parse_tiles("w_bf16=1"))


@pytest.mark.parametrize("spec,rule", [("w_tma=1,w_flat=0", "w_tma=1 needs w_flat=1")])
def test_w_item_loop_options_refused(spec, rule):
    """The W items' TMA loads need the one-loop-per-item path; the layer and `mok bench
    --bwd-tiles` refuse the same."""
    from mok_kernels.backward import parse_tiles
    from mok_kernels.bench import BadInput, check_bwd_tiles
    lay, _ = layer()
    with pytest.raises(ValueError, match=rule):
        MoKBackward(lay, parse_tiles(spec))
    with pytest.raises(BadInput, match=rule.split(":")[0]):
        check_bwd_tiles(spec, ["kimi-k2"])
    MoKBackward(lay, parse_tiles("w_tma=1"))


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


def test_torch_autograd_baseline_gives_the_reference_gradients():
    """The torch-autograd bench baseline (one rank's unfused forward under autograd) computes the
    gradients of that rank's outputs: its experts' and shared weights', x's and the router's."""
    from mok_kernels.baselines import LocalExperts, torch_autograd_rank
    ep, n, e, k, rank = 2, 12, 8, 2, 1
    w = ref.random_weights(e, 32, 16, 16, seed=1)
    ids, wts = make_routing(ep * n, e, k, "zipf:1.2", 0)
    g = torch.Generator().manual_seed(2)
    x, dout = torch.randn(ep * n, 32, generator=g), torch.randn(ep * n, 32, generator=g)
    ex = LocalExperts(w, 4, 8, "cpu", torch.float32)
    params = [t.clone().requires_grad_() for t in (ex.wgu, ex.wd, ex.sgu, ex.sd)]
    xs, ts = x.clone().requires_grad_(), wts.clone().requires_grad_()
    torch_autograd_rank(xs, ids, ts, dout, params, 4, 8, rank, n).backward()
    # reference: routed outputs of experts 4..7 for every token, shared on the rank's tokens
    xr, tr = x.clone().requires_grad_(), wts.clone().requires_grad_()
    wr = [t.clone().requires_grad_() for t in (w.wg, w.wu, w.wd, w.sg, w.su, w.sd)]
    y = ref.routed_outputs(xr, ids, ref.MoEWeights(*wr), range(4, 8))
    home = slice(rank * n, (rank + 1) * n)
    out = ref.combine(torch.zeros_like(xr), y, tr)
    loss = (out * dout).sum() + (ref.swiglu_ffn(xr[home], *wr[3:]) * dout[home]).sum()
    loss.backward()
    close = lambda a, b: torch.allclose(a, b, rtol=1e-4, atol=1e-5)  # noqa: E731
    assert close(xs.grad, xr.grad) and close(ts.grad, tr.grad)
    assert close(params[0].grad, torch.cat([wr[0].grad[4:], wr[1].grad[4:]], 2))
    assert close(params[1].grad, wr[2].grad[4:])
    assert close(params[2].grad, torch.cat([wr[3].grad, wr[4].grad], 1))
    assert close(params[3].grad, wr[5].grad)


def test_backward_gemms_baseline_runs_and_wgrad_is_per_expert():
    from mok_kernels.baselines import BackwardGemms, LocalExperts, wgrad_grouped
    w = ref.random_weights(4, 32, 16, 16, seed=1)
    ex = LocalExperts(w, 0, 4, "cpu", torch.float32)
    offs = torch.tensor([3, 3, 10, 12], dtype=torch.int32)
    gemms = BackwardGemms(ex, offs, 12, 8)
    gemms.refresh()
    gemms()
    a, b = torch.randn(12, 5), torch.randn(12, 7)
    got = wgrad_grouped(a, b, offs)
    assert torch.allclose(got[2], a[3:10].t() @ b[3:10]) and torch.count_nonzero(got[1]) == 0


def test_bench_pass_flag(tmp_path, capsys):
    from mok_kernels import bench
    a = bench.parse_args(["--pass", "bwd", "--out", str(tmp_path / "r.jsonl")])
    assert a.pass_ == "bwd" and a.systems == "mok,gemm-only,torch-autograd"
    for argv, word in ((["--pass", "both"], "--pass"), (["--pass", "bwd", "--systems", "torch-grouped"],
                                                        "--systems")):
        with pytest.raises(bench.BadInput, match=word):
            bench._check_args(bench.parse_args(argv + ["--out", str(tmp_path / "r.jsonl")]))
    rec = bench.make_record(system="torch-autograd", model="kimi-k2", ep=16, tokens=64,
                            knobs={}, routing="uniform", seed=0, times=[1.0], breakdown={},
                            note="", hardware={"preset": "h200-1"}, software={}, pass_="bwd")
    from mok_model.records import validate_record
    validate_record(rec)
    assert rec["pass"] == "bwd"


def test_backward_tiles_spec_and_bench_flag(tmp_path):
    """--bwd-tiles / parse_tiles: the option sets the lead times on the GPU (w_flat, a_fuse_gu,
    tile sizes, diag) round-trip through their label; bad specs are refused before any run."""
    from mok_kernels import bench
    from mok_kernels.backward import BackwardTiles, parse_tiles, tiles_label
    assert parse_tiles("default") == BackwardTiles() and tiles_label(BackwardTiles()) == "default"
    t = parse_tiles("w_flat=1,a_fuse_gu=1,bn_x=256,diag=1")
    assert t.w_flat and t.a_fuse_gu and t.bn_x == 256 and t.diag == 1 and t.bn_a == 64
    assert parse_tiles(tiles_label(t)) == t
    first = parse_tiles("w_flat=0,a_fuse_gu=0,bw=128")
    assert not first.w_flat and not first.a_fuse_gu and tiles_label(first) == "bw=128,w_flat=0,a_fuse_gu=0"
    with pytest.raises(ValueError, match="field"):
        parse_tiles("w_flatt=1")
    out = str(tmp_path / "r.jsonl")
    bench._check_args(bench.parse_args(["--pass", "bwd", "--bwd-tiles", "default;w_flat=1",
                                        "--out", out]))
    for argv in (["--pass", "bwd", "--bwd-tiles", "nope=2"], ["--bwd-tiles", "w_flat=1"]):
        with pytest.raises(bench.BadInput, match="--bwd-tiles"):
            bench._check_args(bench.parse_args(argv + ["--out", out]))
    lay, _ = layer()
    with pytest.raises(ValueError, match="diag"):
        MoKBackward(lay, BackwardTiles(diag=4))
    MoKBackward(lay, parse_tiles("w_flat=1,a_fuse_gu=1"))


def test_saved_gu_option_checks():
    """save_for_backward / BackwardTiles.saved_gu: the saved tensor is required exactly with the
    option, with the (V*(NS + C), 2Ip) bf16 shape a saving forward leaves; FP8 and group mode
    refuse to save; autograd refuses a mismatched pair."""
    from mok_kernels.autograd import MegakernelForward
    from mok_kernels.backward import BackwardTiles, parse_tiles
    assert parse_tiles("saved_gu=1,bn_a=128") == BackwardTiles(saved_gu=True, bn_a=128)
    lay, _ = layer(rank=None, save_for_backward=True)
    bwd = MoKBackward(lay, BackwardTiles(saved_gu=True))
    want = (lay.vranks * (lay.ns + lay.capacity), 2 * lay.Ip)
    bwd.check_saved(torch.empty(want, dtype=torch.bfloat16))          # accepted
    with pytest.raises(ValueError, match="save_for_backward"):
        bwd.check_saved(None)
    for bad in (torch.empty(want), torch.empty(want[0] - 1, want[1], dtype=torch.bfloat16)):
        with pytest.raises(ValueError, match="expected a contiguous"):
            bwd.check_saved(bad)
    with pytest.raises(ValueError, match="saved_gu given"):
        MoKBackward(lay).check_saved(torch.empty(want, dtype=torch.bfloat16))
    with pytest.raises(ValueError, match="BF16 only"):
        KernelConfig(precision="fp8", save_for_backward=True).validate()
    with pytest.raises(ValueError, match="saved_gu"):
        MegakernelForward(cfg=KernelConfig(capacity=1.0), bwd_tiles=BackwardTiles(saved_gu=True))
    MegakernelForward(cfg=KernelConfig(capacity=1.0, save_for_backward=True),
                      bwd_tiles=BackwardTiles(saved_gu=True, bn_a=128))
