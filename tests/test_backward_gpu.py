"""GPU tests of the MoK backward megakernel (backward.py) against float32 autograd through the
reference layer (skipped without CUDA).

The helpers also run on the CPU in the Triton interpreter (TRITON_INTERPRET=1, tiny shapes; see
mok_kernels/NOTES.md): ``DEV`` is then "cpu" and the module is importable without CUDA.
"""

from __future__ import annotations

import os

import pytest
import torch

from mok_kernels import reference as ref
from mok_kernels.routing import make_routing

INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"
DEV = "cpu" if INTERPRET else "cuda"
pytestmark = pytest.mark.gpu
if not torch.cuda.is_available() and not INTERPRET:  # pragma: no cover - CPU CI
    pytest.skip("needs a CUDA GPU", allow_module_level=True)

from mok_kernels.backward import BackwardTiles, MoKBackward, parse_tiles  # noqa: E402
from mok_kernels.megakernel import KernelConfig, MegakernelStallError, MoKLayer  # noqa: E402

TOL = 2e-2


def rel(a: torch.Tensor, b: torch.Tensor) -> float:
    a, b = a.detach().double(), b.detach().double()
    assert torch.isfinite(a).all()
    return float((a - b).norm() / b.norm().clamp_min(1e-30))


def setup(ep, routing, seed, e, h, i, i_shared, n, k):
    """bf16 weights (and their float32 values), tokens x, output gradients dOut, routes of P*N
    tokens. routing "idle": every route on the first half of the experts."""
    w = ref.random_weights(e, h, i, i_shared, seed=seed).to(torch.bfloat16).to(device=DEV)
    wf = w.to(torch.float32)
    g = torch.Generator(device=DEV).manual_seed(seed + 7)
    x = torch.randn(ep * n, h, device=DEV, generator=g).to(torch.bfloat16)
    dout = torch.randn(ep * n, h, device=DEV, generator=g).to(torch.bfloat16)
    if routing == "idle":
        ids, wts = make_routing(ep * n, e // 2, k, "uniform", seed, device=DEV)
    else:
        ids, wts = make_routing(ep * n, e, k, routing, seed, device=DEV)
    return w, wf, x, dout, ids, wts


def reference_grads(x, dout, ids, wts, wf, home):
    """float32 autograd through reference.py over all P*N tokens: dx, dw, routed dwg/dwu/dwd, the
    shared expert's weight gradients over the ``home`` tokens, and each route's own dX and dw
    ((P*N*k, H), (P*N*k,))."""
    xs = x.float().requires_grad_()
    ts = wts.float().clone().requires_grad_()
    ps = [t.clone().requires_grad_() for t in (wf.wg, wf.wu, wf.wd)]
    sh = [None if t is None else t.clone().requires_grad_() for t in (wf.sg, wf.su, wf.sd)]
    routed = ref.routed_outputs(xs, ids, ref.MoEWeights(*ps))                # (P*N, k, H)
    out = ref.combine(torch.zeros_like(xs), routed, ts)
    if wf.sg is not None:
        out = out + ref.swiglu_ffn(xs, wf.sg, wf.su, wf.sd)     # dx through the shared expert
    (out * dout.float()).sum().backward()
    got = dict(dx=xs.grad, dw=ts.grad, dwg=ps[0].grad, dwu=ps[1].grad, dwd=ps[2].grad)
    if wf.sg is not None:
        ref.swiglu_ffn(x[home].float(), *sh).mul(dout[home].float()).sum().backward()
        got.update(dsg=sh[0].grad, dsu=sh[1].grad, dsd=sh[2].grad)
    # per route: tokens repeated k times, one route each
    pk, k = ids.shape
    xr = x.float().repeat_interleave(k, 0).requires_grad_()
    y = ref.routed_outputs(xr, ids.reshape(-1, 1), wf)[:, 0]                    # (P*N*k, H)
    dy = dout.float().repeat_interleave(k, 0)
    (y * dy * wts.reshape(-1, 1).float()).sum().backward()
    got.update(route_dx=xr.grad, route_dw=(y * dy).sum(1).detach())
    return got


def run_case(ep, rank, routing, minibatch=256, comm=8, seed=0, shape=None, cfg_extra=None,
             tiles=None, check=True):
    """One backward pass compared with the float32 reference; returns {name: relative error},
    the backward and the inputs. rank=None: every gradient of the P virtual ranks; rank=r: its
    served dX / dw slots, its experts' weight gradients, its shared-expert gradients (home
    tokens) and its home dx / dw (slots served by peers filled from the reference first)."""
    sh = dict(e=16, h=256, i=128, i_shared=None, n=128, k=4) | (shape or {})
    sh["i_shared"] = sh["i"] if sh["i_shared"] is None else sh["i_shared"]
    n, k, e = sh["n"], sh["k"], sh["e"]
    w, wf, x, dout, ids, wts = setup(ep, routing, seed, **sh)
    extra = dict(cfg_extra or {})
    saved = tiles is not None and tiles.saved_gu
    if saved:    # g and u saved by a forward on the same inputs
        extra["save_for_backward"] = True
    if INTERPRET:   # programs run one after another: comm programs first, never joining
        extra.update(join=False, max_spin=64, tma=False,
                     grid=(comm + 1) * (ep if rank is None else 1))
    cfg = KernelConfig(dispatch="pull", combine="push", minibatch=minibatch, comm_sms=comm,
                       macrobatch=131072, capacity=1.0, on_error="raise", **extra)
    layer = MoKLayer(w, ep, n, k, rank, cfg, device=DEV, hardware="h200-1")
    bwd = MoKBackward(layer, tiles)
    home = slice(0, ep * n) if rank is None else slice(rank * n, (rank + 1) * n)
    want = reference_grads(x, dout, ids, wts, wf, home)
    el = e // ep
    if rank is None:
        served = torch.ones(ep * n * k, dtype=torch.bool, device=DEV)
        lo, hi = 0, e
    else:
        lo, hi = rank * el, (rank + 1) * el
        served = ((ids >= lo) & (ids < hi)).reshape(-1)
    sv = served.nonzero().squeeze(1)
    fill = (~served).reshape(ep * n, k)[home].reshape(-1).nonzero().squeeze(1) + home.start * k
    bwd.dxs[fill] = want["route_dx"][fill].to(torch.bfloat16)    # peers' slots for home routes
    bwd.dws[fill] = want["dw"].reshape(-1)[fill]
    bwd.dxs[sv] = float("nan")                                   # poison what this launch serves
    bwd.dws[sv] = float("nan")
    saved_gu = None
    if saved:
        layer.forward(x, ids, wts)
        saved_gu = layer.saved_gu
    res = bwd.run(x, ids, wts, dout, saved_gu=saved_gu)
    if DEV == "cuda":
        torch.cuda.synchronize()
    dwg, dwu, dwd, dsg, dsu, dsd = bwd.weight_grads(res)
    errs = dict(dx=rel(res.dx, want["dx"][home]), dw=rel(res.dw, want["dw"][home]),
                slot_dx=rel(bwd.dxs[sv], want["route_dx"][sv]),
                slot_dw=rel(bwd.dws[sv], want["dw"].reshape(-1)[sv]),
                dwg=rel(dwg, want["dwg"][lo:hi]), dwu=rel(dwu, want["dwu"][lo:hi]),
                dwd=rel(dwd, want["dwd"][lo:hi]))
    if wf.sg is not None:
        errs.update(dsg=rel(dsg, want["dsg"]), dsu=rel(dsu, want["dsu"]), dsd=rel(dsd, want["dsd"]))
    if check:
        assert max(errs.values()) <= TOL, errs
        # experts that received nothing: gradients exactly zero
        counts = torch.bincount(ids.reshape(-1), minlength=e)[lo:hi]
        idle = (counts == 0).nonzero().squeeze(1)
        for grad in (dwg, dwu, dwd):
            assert torch.count_nonzero(grad[idle]) == 0
    return errs, bwd, (x, ids, wts, dout, saved_gu)


# (ep, rank, routing, minibatch): every routing, both rank modes, several minibatches
CASES = [
    (1, 0, "uniform", 256),
    (4, None, "uniform", 256),
    (8, 3, "zipf:1.2", 300),
    (4, None, "zipf:1.2", 512),
    (8, 5, "hot:0.2", 256),
    (4, None, "onehot", 1000),
    (16, 0, "onehot", 500),
    (4, None, "idle", 256),
    (8, 6, "idle", 256),           # rank 6 of 8 owns experts 12-13: nothing routed to it
]


@pytest.mark.parametrize("ep,rank,routing,mb", CASES)
def test_backward_matches_fp32_autograd(ep, rank, routing, mb):
    run_case(ep, rank, routing, mb)


def test_backward_without_shared_expert():
    run_case(4, None, "zipf:1.2", 256, shape=dict(i_shared=0))
    run_case(8, 2, "uniform", 256, shape=dict(i_shared=0))


@pytest.mark.parametrize("ep,rank,routing,shape", [
    # kimi-k2 / deepseek-v3 hidden and expert width, a small token count
    (8, 1, "uniform", dict(h=7168, i=2048, e=16, n=64, k=8)),
    (2, None, "zipf:1.2", dict(h=7168, i=2048, e=8, n=32, k=4)),
    # hidden not a multiple of 1024 (nor of the 128-column tiles), I padded to whole blocks
    (4, None, "uniform", dict(h=2880, i=2880, e=8, n=96, k=4)),
    (4, 2, "hot:0.2", dict(h=1536, i=512, e=16, n=160, k=4)),
    (4, None, "onehot", dict(h=1536, i=768, e=8, n=160, k=4)),
])
def test_production_shapes(ep, rank, routing, shape):
    run_case(ep, rank, routing, 256, shape=shape)


def test_comm_programs_not_joining_and_one_comm_program():
    run_case(4, None, "zipf:1.2", 256, comm=1)
    run_case(8, 3, "uniform", 256, comm=4, cfg_extra=dict(join=False))


def test_bits_identical_over_runs():
    _, bwd, (x, ids, wts, dout, _) = run_case(4, None, "zipf:1.2", 256)
    first = [t.clone() for t in (bwd.dx, bwd.dw, bwd.dwgu, bwd.dwd)]
    for _ in range(5):
        res = bwd.run(x, ids, wts, dout)
        for a, b in zip((res.dx, res.dw, res.dwgu, res.dwd), first):
            assert torch.equal(a, b)


def test_stalled_wait_raises_and_leaves_nan():
    w, wf, x, dout, ids, wts = setup(4, "uniform", 1, 16, 256, 128, 128, 128, 4)
    cfg = KernelConfig(dispatch="pull", combine="push", minibatch=256, comm_sms=8,
                       macrobatch=131072, capacity=1.0, max_spin=3000, on_error="raise")
    bwd = MoKBackward(MoKLayer(w, 4, 128, 4, 1, cfg, device=DEV, hardware="h200-1"))
    bwd.stall_test = 1       # comm programs never signal minibatch 0
    with pytest.raises(MegakernelStallError, match="ready counter of minibatch 0"):
        bwd.run(x, ids, wts, dout)
    assert torch.isnan(bwd.dx).all() and torch.isnan(bwd.dw).all()
    assert torch.isnan(bwd.dwgu).all() and torch.isnan(bwd.dwd).all()
    bwd.stall_test = 0
    res = bwd.run(x, ids, wts, dout)
    assert torch.isfinite(res.dx).all() and torch.isfinite(res.dwgu).all()


# The defaults are w_flat, a_fuse_gu and the widest W tile (bw up to 256), tested by every case
# above; the other paths stay tested here with the same tolerance and checks. bw=256 needs the
# padded I to be a multiple of 256 (production shapes).
OPTION_SETS = {
    "first_path": dict(w_flat=False, a_fuse_gu=False, bw=128),
    "w_flat_only": dict(a_fuse_gu=False),
    "fuse_only": dict(w_flat=False),
}


@pytest.mark.parametrize("opts", list(OPTION_SETS), ids=list(OPTION_SETS))
@pytest.mark.parametrize("ep,rank,routing,mb", [
    (8, 3, "zipf:1.2", 300),
    (4, None, "onehot", 1000),        # one expert with every row: a long flat W loop
    (8, 6, "idle", 256),              # nothing routed to this rank: W items of empty experts
])
def test_performance_options_match_fp32_autograd(opts, ep, rank, routing, mb):
    run_case(ep, rank, routing, mb, tiles=BackwardTiles(**OPTION_SETS[opts]))


@pytest.mark.parametrize("ep,rank,routing,shape", [
    (2, None, "zipf:1.2", dict(h=7168, i=2048, e=8, n=32, k=4)),
    (4, 2, "hot:0.2", dict(h=1536, i=512, e=16, n=160, k=4)),
    (4, None, "uniform", dict(h=2880, i=2880, e=8, n=96, k=4)),    # I padded: 2944 = 23 x 128
])
def test_first_path_production_shapes(ep, rank, routing, shape):
    run_case(ep, rank, routing, 256, shape=shape,
             tiles=BackwardTiles(w_flat=False, a_fuse_gu=False, bw=128 if shape["i"] % 128 == 0 else 0))


def test_first_path_bits_identical_over_runs():
    _, bwd, (x, ids, wts, dout, _) = run_case(4, None, "zipf:1.2", 256,
                                           tiles=BackwardTiles(w_flat=False, a_fuse_gu=False))
    first = [t.clone() for t in (bwd.dx, bwd.dw, bwd.dwgu, bwd.dwd)]
    for _ in range(3):
        res = bwd.run(x, ids, wts, dout)
        for a, b in zip((res.dx, res.dw, res.dwgu, res.dwd), first):
            assert torch.equal(a, b)


@pytest.mark.parametrize("diag", [1, 2, 3])
def test_timing_diagnostics_run_without_stalls(diag):
    """diag (bench --bwd-tiles diag=N) skips W and/or X items: the pass must still finish (no
    wait on skipped work); what is skipped is not checked."""
    w, wf, x, dout, ids, wts = setup(4, "uniform", 1, 16, 256, 128, 128, 128, 4)
    cfg = KernelConfig(dispatch="pull", combine="push", minibatch=256, comm_sms=8,
                       macrobatch=131072, capacity=1.0, on_error="raise")
    bwd = MoKBackward(MoKLayer(w, 4, 128, 4, 1, cfg, device=DEV, hardware="h200-1"),
                      BackwardTiles(w_flat=True, diag=diag))
    bwd.run(x, ids, wts, dout)      # raises MegakernelStallError on a stalled wait


# g and u saved by the forward (KernelConfig(save_for_backward=True), BackwardTiles(saved_gu=True)):
# the A items read them instead of recomputing the gate/up GEMM. Same tolerance and checks.
@pytest.mark.parametrize("bn_a,bn_x", [(64, 128), (128, 128), (128, 256)])
@pytest.mark.parametrize("ep,rank,routing,mb", [
    (1, 0, "uniform", 256),
    (8, 3, "zipf:1.2", 300),
    (4, None, "onehot", 1000),
    (8, 6, "idle", 256),              # nothing routed to this rank
    (4, None, "hot:0.2", 256),
])
def test_saved_gu_matches_fp32_autograd(bn_a, bn_x, ep, rank, routing, mb):
    run_case(ep, rank, routing, mb, tiles=BackwardTiles(saved_gu=True, bn_a=bn_a, bn_x=bn_x))


@pytest.mark.parametrize("ep,rank,routing,shape", [
    # kimi-k2 and glm-5 hidden and expert widths (few experts and tokens, so the test is quick)
    (8, 1, "uniform", dict(h=7168, i=2048, e=16, n=64, k=8)),
    (2, None, "zipf:1.2", dict(h=6144, i=2048, e=8, n=128, k=8)),
    (4, None, "uniform", dict(h=2880, i=2880, e=8, n=96, k=4)),    # I padded: 2944 = 23 x 128
    (4, 2, "hot:0.2", dict(h=1536, i=512, e=16, n=160, k=4)),
])
@pytest.mark.parametrize("tiles", ["saved_gu=1", "saved_gu=1,bn_a=128,bn_x=256"])
def test_saved_gu_production_shapes(ep, rank, routing, shape, tiles):
    run_case(ep, rank, routing, 256, shape=shape, tiles=parse_tiles(tiles))


# a_epi: dA parked in a per-program float32 scratch, the SwiGLU backward in chunks, so the A item
# is one dot of N = bn_a up to 256. Several column blocks of I and of H, I not a power of two.
@pytest.mark.parametrize("tiles", ["saved_gu=1,bn_a=256,bn_x=256,a_epi=64",
                                   "saved_gu=1,bn_a=128,bn_x=256,a_epi=32"])
@pytest.mark.parametrize("ep,rank,routing,shape", [
    (8, 3, "zipf:1.2", dict(i=256)),
    (4, None, "onehot", dict(i=768, h=384)),
    (8, 6, "idle", dict(i=512)),                 # nothing routed to this rank
    (8, 1, "uniform", dict(h=7168, i=2048, e=16, n=64, k=8)),       # kimi-k2 widths
    (2, None, "zipf:1.2", dict(h=6144, i=1536, e=8, n=128, k=8)),
    (4, None, "uniform", dict(h=2880, i=2880, e=8, n=96, k=4)),   # I padded to 2944: 128 columns
])
def test_a_epi_matches_fp32_autograd(tiles, ep, rank, routing, shape):
    run_case(ep, rank, routing, 256, shape=shape, tiles=parse_tiles(tiles))


def test_a_epi_bits_identical_over_runs():
    tiles = parse_tiles("saved_gu=1,bn_a=256,bn_x=256,a_epi=64")
    _, bwd, (x, ids, wts, dout, gu) = run_case(4, None, "zipf:1.2", 256, shape=dict(i=512),
                                               tiles=tiles)
    first = [t.clone() for t in (bwd.dx, bwd.dw, bwd.dwgu, bwd.dwd)]
    for _ in range(3):
        res = bwd.run(x, ids, wts, dout, saved_gu=gu)
        for a, b in zip((res.dx, res.dw, res.dwgu, res.dwd), first):
            assert torch.equal(a, b)


def test_saved_gu_bits_identical_over_runs():
    _, bwd, (x, ids, wts, dout, gu) = run_case(4, None, "zipf:1.2", 256,
                                               tiles=BackwardTiles(saved_gu=True))
    first = [t.clone() for t in (bwd.dx, bwd.dw, bwd.dwgu, bwd.dwd)]
    lay = bwd.layer
    # the rows a forward writes: each rank's shared rows, then its kept routed rows (the rest of
    # the capacity is never written nor read)
    kept = lay.last_schedule.offsets.reshape(lay.vranks, -1)[:, -1].tolist()
    rows = torch.cat([torch.arange(r * (lay.ns + lay.capacity), r * (lay.ns + lay.capacity)
                                   + lay.ns + int(kept[r])) for r in range(lay.vranks)])
    for _ in range(3):
        lay.forward(x, ids, wts)                      # a fresh save: the same bits
        assert torch.equal(lay.saved_gu[rows.to(gu.device)], gu[rows.to(gu.device)])
        res = bwd.run(x, ids, wts, dout, saved_gu=lay.saved_gu)
        for a, b in zip((res.dx, res.dw, res.dwgu, res.dwd), first):
            assert torch.equal(a, b)


def test_saved_gu_equals_the_recomputed_pre_activations():
    """The saved tensor holds bf16(x Wg) and bf16(x Wu) of every served row at the rows and
    columns of [dg|du] (shared rows first, gate|up interleaved per bn_gu block)."""
    _, bwd, (x, ids, wts, dout, gu) = run_case(4, 1, "zipf:1.2", 256,
                                               tiles=BackwardTiles(saved_gu=True), check=False)
    lay, sched = bwd.layer, bwd.layer.last_schedule
    bn, ip, ns = lay.cfg.bn_gu, lay.Ip, lay.ns
    g = gu.view(-1, ip // bn, 2, bn)[:, :, 0].reshape(-1, ip)[:, :lay.I].float()
    u = gu.view(-1, ip // bn, 2, bn)[:, :, 1].reshape(-1, ip)[:, :lay.I].float()
    w = bwd.layer.weights
    home = x[ns * 1:ns * 2].float()
    assert rel(g[:ns], home @ w.sg.float()) < 1e-2 and rel(u[:ns], home @ w.su.float()) < 1e-2
    offs = sched.offsets.long().tolist()
    src = sched.recv_src.long()
    for le in range(lay.el):
        a, b = offs[le], offs[le + 1]
        if b > a:
            xe = x[src[a:b]].float()
            e = 1 * lay.el + le
            assert rel(g[ns + a:ns + b], xe @ w.wg[e].float()) < 1e-2
            assert rel(u[ns + a:ns + b], xe @ w.wu[e].float()) < 1e-2


# --- weight gradients written straight in the parameters' layout (w_direct, w_bf16) ------------

def _routed_and_shared(tiles, ep, rank, routing, shape, mb=256):
    """run_case with `tiles` (checked against float32), then its weight gradients unpacked."""
    _, bwd, _ = run_case(ep, rank, routing, mb, shape=shape, tiles=tiles)
    return [None if g is None else g.clone() for g in bwd.weight_grads()], bwd


@pytest.mark.parametrize("ep,rank,routing,shape", [
    (2, None, "zipf:1.2", dict(h=7168, i=2048, e=8, n=64, k=4)),        # kimi-k2 widths
    (4, None, "uniform", dict(h=2880, i=2880, e=8, n=96, k=4)),         # I padded to 2944
    (8, 3, "hot:0.2", dict(h=1536, i=768, e=16, n=128, k=4)),
    (4, None, "idle", dict(h=2560, i=1280, e=8, n=96, k=4, i_shared=0)),
])
@pytest.mark.parametrize("saved", ["", "saved_gu=1,bn_a=128,bn_x=256,"])
def test_direct_weight_gradients_are_the_packed_ones(ep, rank, routing, shape, saved):
    """w_direct gives the packed path's float32 weight gradients bit for bit, and w_bf16 their
    round-to-nearest bfloat16 (what the autograd path's .to(bfloat16) of them gives)."""
    packed, _ = _routed_and_shared(parse_tiles(saved.rstrip(",") or "default"), ep, rank,
                                   routing, shape)
    direct, bwd = _routed_and_shared(parse_tiles(saved + "w_direct=1"), ep, rank, routing, shape)
    half, bwd16 = _routed_and_shared(parse_tiles(saved + "w_direct=1,w_bf16=1"), ep, rank,
                                     routing, shape)
    assert bwd.dwgu.shape[0] == bwd.layer.vranks            # only the shared expert's slots
    for j, (a, b, c) in enumerate(zip(packed, direct, half)):
        if a is None:                                        # no shared expert
            assert b is None and c is None
            continue
        assert b.dtype == torch.float32 and torch.equal(a, b)
        assert c.dtype == (torch.bfloat16 if j < 3 else torch.float32)   # routed / shared
        assert torch.equal(a.to(c.dtype), c)


@pytest.mark.parametrize("ep,rank,routing,shape", [
    (2, None, "zipf:1.2", dict(h=7168, i=2048, e=8, n=64, k=4)),        # kimi-k2 widths
    (4, None, "uniform", dict(h=2880, i=2880, e=8, n=96, k=4)),         # I padded, H not 128s
    (8, 3, "hot:0.2", dict(h=1536, i=768, e=16, n=128, k=4)),
    (4, None, "idle", dict(h=2560, i=1280, e=8, n=96, k=4, i_shared=0)),
])
@pytest.mark.parametrize("extra,plain", [
    ("w_tma=1", "default"), ("w_tma=1,bk_rows=32", "bk_rows=32"),
    ("saved_gu=1,bn_a=128,bn_x=256,w_direct=1,w_bf16=1,w_tma=1",
     "saved_gu=1,bn_a=128,bn_x=256,w_direct=1,w_bf16=1")])
def test_w_item_variants(ep, rank, routing, shape, extra, plain):
    """W items whose operands come by tensor descriptors over exactly an expert's rows
    (w_tma): every gradient within the float32 tolerance (run_case), the same bits on a second
    pass, and within 1e-4 of the pointer-load path's (printed: whether bit for bit)."""
    first, _ = _routed_and_shared(parse_tiles(extra), ep, rank, routing, shape)
    again, _ = _routed_and_shared(parse_tiles(extra), ep, rank, routing, shape)
    plain, _ = _routed_and_shared(parse_tiles(plain), ep, rank, routing, shape)
    same = []
    for a, b, c in zip(first, again, plain):
        if a is None:
            continue
        assert torch.equal(a, b)
        assert rel(a.float(), c.float()) < 1e-4
        same.append(torch.equal(a, c))
    print(f"{extra}: bit for bit the pointer path's: {same}")
