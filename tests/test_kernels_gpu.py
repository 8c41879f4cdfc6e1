"""GPU tests of the MoK megakernel against the float32 reference (skipped without CUDA)."""

from __future__ import annotations

import pytest
import torch

from mok_kernels import reference as ref
from mok_kernels.routing import make_routing

pytestmark = pytest.mark.gpu
if not torch.cuda.is_available():  # pragma: no cover - CPU CI
    pytest.skip("needs a CUDA GPU", allow_module_level=True)

from mok_kernels.megakernel import KernelConfig, MegakernelStallError, MoKLayer  # noqa: E402
from mok_kernels.schedule import CapacityOverflowError  # noqa: E402

E, K, H, I, N = 32, 4, 256, 128, 200


def rel(a: torch.Tensor, b: torch.Tensor) -> float:
    a, b = a.float(), b.float()
    assert torch.isfinite(a).all()
    return float((a - b).norm() / b.norm())


def setup(ep, routing, seed):
    w = ref.random_weights(E, H, I, I, seed=seed).to(torch.bfloat16).to(device="cuda")
    wf = w.to(torch.float32)
    g = torch.Generator(device="cuda").manual_seed(seed + 7)
    x = torch.randn(ep * N, H, device="cuda", generator=g).to(torch.bfloat16)
    ids, wts = make_routing(ep * N, E, K, routing, seed, device="cuda")
    return w, wf, x, ids, wts


def run_case(ep, rank, routing, dispatch="pull", combine="push", minibatch=300, capacity=1.0,
             comm=8, macro=131072, seed=0, **tiles):
    w, wf, x, ids, wts = setup(ep, routing, seed)
    cfg = KernelConfig(dispatch=dispatch, combine=combine, minibatch=minibatch, comm_sms=comm,
                       macrobatch=macro, capacity=capacity, **tiles)
    layer = MoKLayer(w, ep, N, K, rank, cfg)
    y = ref.routed_outputs(x.float(), ids, wf)                  # (P*N, k, H) every route
    el = E // ep
    if rank is not None:
        lo, hi = rank * el, (rank + 1) * el
        served = (ids >= lo) & (ids < hi)                       # routes this rank serves
        home = slice(rank * N, (rank + 1) * N)
        # peers' pushed combine outputs for home routes served elsewhere: from the reference
        fill = (~served[home]).reshape(-1).nonzero().squeeze(1)
        layer.comb[rank * N * K + fill] = y[home].reshape(-1, H)[fill].to(torch.bfloat16)
    else:
        served = torch.ones_like(ids, dtype=torch.bool)
        home = slice(0, ep * N)
    layer.comb[served.reshape(-1).nonzero().squeeze(1)] = float("nan")   # poison served slots
    out = layer.forward(x, ids, wts)
    torch.cuda.synchronize()
    layer.check()
    want = ref.combine(ref.shared_output(x[home].float(), wf), y[home], wts[home])
    sv = served.reshape(-1).nonzero().squeeze(1)
    r_served = rel(layer.comb[sv], y.reshape(-1, H)[sv])
    return rel(out, want), r_served, layer, (x, ids, wts)


CASES = [
    (1, 0, "uniform", "pull", "push", 300),
    (1, 0, "uniform", "push", "pull", 256),
    (8, 3, "zipf:1.2", "pull", "push", 300),
    (8, 3, "zipf:1.2", "push", "pull", 300),
    (16, 0, "onehot", "pull", "pull", 500),
    (16, 5, "uniform", "push", "push", 384),
    (4, None, "uniform", "pull", "push", 300),
    (4, None, "onehot", "push", "pull", 1000),
]


@pytest.mark.parametrize("ep,rank,routing,dispatch,combine,mb", CASES)
def test_megakernel_matches_reference(ep, rank, routing, dispatch, combine, mb):
    r_out, r_served, _, _ = run_case(ep, rank, routing, dispatch, combine, mb)
    assert r_served <= 1e-2, r_served
    assert r_out <= 1e-2, r_out


@pytest.mark.parametrize("ep,rank,routing,dispatch,combine,mb", [CASES[2], CASES[5], CASES[7]])
def test_pointer_weight_tiles_match_reference(ep, rank, routing, dispatch, combine, mb):
    # weights loaded through plain pointers instead of the default TMA descriptors
    r_out, r_served, _, _ = run_case(ep, rank, routing, dispatch, combine, mb, tma=False)
    assert r_served <= 1e-2, r_served
    assert r_out <= 1e-2, r_out


def test_group_on_real_gpus():
    """Real ranks (one process per GPU, symmetric memory, NCCL baseline); all GPUs of the host."""
    import subprocess
    import sys
    res = subprocess.run([sys.executable, "-m", "mok_kernels.group_check", "--iters", "3"],
                         capture_output=True, text=True, timeout=600)
    print(res.stdout, res.stderr)
    assert res.returncode == 0, res.stdout + res.stderr


@pytest.mark.parametrize("dispatch", ["pull", "push"])
def test_small_ring_back_pressure(dispatch):
    # ring of minibatch + block_m rows: comm (pull: the receiver's; push: every sender's) must
    # wait for the receiver's compute to free rows
    r_out, r_served, _, _ = run_case(4, None, "uniform", dispatch, "push", 256, macro=1, comm=16)
    assert r_out <= 1e-2 and r_served <= 1e-2


def test_eight_virtual_ranks_push_push():
    r_out, r_served, _, _ = run_case(8, None, "zipf:1.2", "push", "push", 300)
    assert r_out <= 1e-2 and r_served <= 1e-2


def test_bits_identical_over_runs():
    _, _, layer, (x, ids, wts) = run_case(8, 2, "zipf:1.2", "pull", "push", 300)
    first = layer.forward(x, ids, wts).clone()
    for _ in range(9):
        torch.cuda.synchronize()
        assert torch.equal(layer.forward(x, ids, wts), first)
    layer.check()


def test_stalled_wait_raises():
    w, wf, x, ids, wts = setup(4, "uniform", 1)
    cfg = KernelConfig(minibatch=256, comm_sms=8, capacity=1.0, max_spin=3000)
    layer = MoKLayer(w, 4, N, K, 1, cfg)
    layer.stall_test = 1   # comm programs never signal minibatch 0
    layer.forward(x, ids, wts)
    torch.cuda.synchronize()
    with pytest.raises(MegakernelStallError, match="ready counter of minibatch 0"):
        layer.check()
    layer.stall_test = 0
    layer.forward(x, ids, wts)
    torch.cuda.synchronize()
    layer.check()


def test_capacity_overflow_raises():
    w, wf, x, ids, wts = setup(16, "onehot", 2)
    layer = MoKLayer(w, 16, N, K, 0, KernelConfig(minibatch=512, capacity=0.1))
    layer.forward(x, ids, wts)
    torch.cuda.synchronize()
    with pytest.raises(CapacityOverflowError, match="overflow"):
        layer.check()


def test_torch_grouped_matches_reference():
    from mok_kernels.baselines import LocalExperts, torch_grouped_rank
    ep, rank = 4, 2
    w, wf, x, ids, wts = setup(ep, "zipf:1.2", 3)
    home = torch.zeros(ep * N, H, device="cuda")
    for r in range(ep):
        ex = LocalExperts(w, r * E // ep, (r + 1) * E // ep, "cuda", torch.bfloat16)
        part, sh = torch_grouped_rank(x, ids, wts, ex, r, N)
        home += part
        if r == rank:
            shared = sh
    got = home[rank * N:(rank + 1) * N] + shared.float()
    want = ref.moe_reference(x[rank * N:(rank + 1) * N].float(), ids[rank * N:(rank + 1) * N],
                             wts[rank * N:(rank + 1) * N], wf)
    assert rel(got, want) <= 1e-2


@pytest.mark.parametrize("ep,rank,routing,mult,mb,bm", [
    (16, 3, "uniform", 0.5, 300, 128), (8, None, "zipf:1.2", 0.5, 1000, 128),
    (4, 0, "onehot", 0.2, 256, 64), (1, 0, "hot:0.1", 1.0, 4096, 128)])
def test_fused_schedule_equals_tensor_ops(ep, rank, routing, mult, mb, bm):
    import dataclasses
    from mok_kernels.schedule import build_schedule
    ids, _ = make_routing(ep * 512, 64, 8, routing, 5, device="cuda")
    kw = dict(ep=ep, num_experts=64, rank=rank, capacity_multiplier=mult, minibatch=mb, block_m=bm)
    a = build_schedule(ids, use_triton=False, **kw)
    b = build_schedule(ids, use_triton=True, **kw)
    for f in dataclasses.fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, torch.Tensor):
            assert torch.equal(x.long(), y.long()), f.name
