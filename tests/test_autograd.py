"""Training with the MoK layer on the CPU: mok_kernels.autograd against float32 autograd through
the reference layer, determinism, gradcheck, and the megakernel forward's host side (weights
re-packed every step, padding to virtual ranks) with the launch replaced by the reference."""

from __future__ import annotations

import pytest
import torch

from mok_kernels import reference as ref
from mok_kernels.autograd import MegakernelForward, TorchForward, group_routes, mok_moe, resolve_forward
from mok_kernels.routing import make_routing

E, H, I, N, K = 16, 64, 32, 96, 4
ROUTINGS = ["uniform", "zipf:1.5", "hot:0.2", "onehot", "idle"]


def routes(routing: str, n: int = N, e: int = E, k: int = K, seed: int = 0):
    """(ids, weights); "idle": every route on the first half of the experts, the rest get none."""
    if routing == "idle":
        ids, wts = make_routing(n, e // 2, k, "uniform", seed)
        return ids, wts
    return make_routing(n, e, k, routing, seed)


def rel(a: torch.Tensor, b: torch.Tensor) -> float:
    a, b = a.detach().double(), b.detach().double()
    assert torch.isfinite(a).all()
    return float((a - b).norm() / b.norm().clamp_min(1e-30))


def run(fn, x, ids, tw, w: ref.MoEWeights, cot, dtype=None):
    """Output and every gradient (x, topk_w, wg, wu, wd[, sg, su, sd]) of sum(cot * fn(...))."""
    cast = lambda t: t.detach().clone().to(dtype or t.dtype)  # noqa: E731 - fresh leaves
    xs, ts = cast(x).requires_grad_(), tw.clone().requires_grad_()
    ps = [None if t is None else cast(t).requires_grad_() for t in (w.wg, w.wu, w.wd, w.sg, w.su, w.sd)]
    out = fn(xs, ids, ts, ref.MoEWeights(*ps))
    (out.float() * cot).sum().backward()
    return [out, xs.grad, ts.grad] + [p.grad for p in ps if p is not None]


def setup(routing: str, shared: bool, seed: int = 0):
    w = ref.random_weights(E, H, I, I if shared else 0, seed=seed)
    g = torch.Generator().manual_seed(seed + 1)
    x = torch.randn(N, H, generator=g)
    cot = torch.randn(N, H, generator=g)
    ids, tw = routes(routing, seed=seed)
    return x, ids, tw, w, cot


@pytest.mark.parametrize("shared", [True, False])
@pytest.mark.parametrize("routing", ROUTINGS)
def test_gradients_match_fp32_reference(routing, shared):
    x, ids, tw, w, cot = setup(routing, shared)
    got = run(lambda *a: mok_moe(*a, backend="torch"), x, ids, tw, w, cot)
    want = run(ref.moe_reference, x, ids, tw, w, cot)
    for a, b in zip(got, want):
        assert rel(a, b) <= 1e-5
    if routing == "idle":   # experts that receive nothing get exactly zero gradient
        for grad in got[3:6]:
            assert torch.count_nonzero(grad[E // 2:]) == 0
            assert torch.count_nonzero(grad[: E // 2]) > 0


@pytest.mark.parametrize("routing", ["uniform", "zipf:1.5", "onehot", "idle"])
def test_bf16_gradients_within_2e2_of_fp32_reference(routing):
    """bf16 tokens and weights (the megakernel's input precision): gradients computed in float32,
    returned in bf16, against float32 autograd at the same (bf16-rounded) values."""
    x, ids, tw, w, cot = setup(routing, True)
    xb = x.to(torch.bfloat16)
    wb = w.to(torch.bfloat16)
    got = run(lambda *a: mok_moe(*a, backend="torch"), xb, ids, tw, wb, cot, dtype=torch.bfloat16)
    want = run(ref.moe_reference, xb.float(), ids, tw, wb.to(torch.float32), cot)
    assert got[0].dtype == torch.bfloat16 and got[3].dtype == torch.bfloat16
    for a, b in zip(got, want):
        assert rel(a, b) <= 2e-2


def test_gradients_are_bitwise_deterministic():
    x, ids, tw, w, cot = setup("zipf:1.5", True)
    first = run(lambda *a: mok_moe(*a, backend="torch"), x, ids, tw, w, cot)
    second = run(lambda *a: mok_moe(*a, backend="torch"), x, ids, tw, w, cot)
    for a, b in zip(first, second):
        assert torch.equal(a, b)


def test_gradcheck_float64():
    """The backward's formulas against finite differences (float64, tiny layer)."""
    e, h, i, n, k = 4, 8, 6, 6, 2
    w = ref.random_weights(e, h, i, i, seed=3, dtype=torch.float64)
    g = torch.Generator().manual_seed(4)
    x = torch.randn(n, h, generator=g, dtype=torch.float64)
    ids, tw = make_routing(n, e, k, "uniform", 5)
    ids[0] = torch.tensor([1, 2])       # expert 0 or 3 may get nothing: that is fine too
    params = [t.clone().requires_grad_() for t in (x, tw.double(), w.wg, w.wu, w.wd, w.sg, w.su, w.sd)]

    def f(x_, tw_, *ws):
        return mok_moe(x_, ids, tw_, ref.MoEWeights(*ws), backend="torch")

    assert torch.autograd.gradcheck(f, params, eps=1e-6, atol=1e-6, rtol=1e-5)


def test_only_some_inputs_need_gradients():
    """Frozen experts (only the router weights and tokens train) and no gradient for x."""
    x, ids, tw, w, cot = setup("uniform", True)
    ts = tw.clone().requires_grad_()
    out = mok_moe(x, ids, ts, w, backend="torch")
    (out * cot).sum().backward()
    want = run(ref.moe_reference, x, ids, tw, w, cot)
    assert rel(ts.grad, want[2]) <= 1e-5


@pytest.mark.parametrize("bad,match", [
    ("dup", "distinct"), ("range", "outside"), ("float", "integers"), ("shape", r"with H = 64 .*got x \(96, 32\)"),
])
def test_bad_inputs_are_refused(bad, match):
    x, ids, tw, w, _ = setup("uniform", True)
    if bad == "dup":
        ids[3, 1] = ids[3, 0]
    elif bad == "range":
        ids[5, 2] = E
    elif bad == "float":
        ids = ids.float()
    else:
        x = x[:, :32]
    with pytest.raises(ValueError, match=match):
        mok_moe(x, ids, tw, w, backend="torch")


def test_group_routes_orders_experts_then_tokens():
    ids = torch.tensor([[2, 0], [0, 1], [2, 1]])
    tok, slot, counts = group_routes(ids, 4)
    assert counts == [2, 2, 2, 0]
    assert tok.tolist() == [0, 1, 1, 2, 0, 2] and slot.tolist() == [1, 0, 1, 1, 0, 0]


def test_auto_backend_on_cpu_is_torch():
    x, ids, _, w, _ = setup("uniform", True)
    assert isinstance(resolve_forward("auto", x, w, K), TorchForward)
    with pytest.raises(ValueError, match="runs on CUDA"):
        resolve_forward("megakernel", x, w, K)
    with pytest.raises(ValueError, match="allowed auto"):
        resolve_forward("fast", x, w, K)


# --- the megakernel forward's host side, with the launch replaced by the reference -----------

def reference_launch(layer, x_all, ids_all, w_all, save_gu=None):
    """Stands in for MoKLayer.forward on the CPU: the reference layer computed from the layer's
    own packed bf16 weights (so it checks what load_weights put there), written to its reused
    output buffer, as the kernel's epilogue does. The save decision is recorded
    (``layer.save_calls``) and, when saving, ``layer.saved_gu`` gets a tensor of the kernel's
    shape (its values are not the kernel's: the CPU backward never reads them)."""
    save = layer.cfg.save_for_backward and save_gu is not False
    layer.__dict__.setdefault("save_calls", []).append(save)
    layer.saved_gu = (torch.zeros(layer.vranks * (layer.ns + layer.capacity), 2 * layer.Ip,
                                  dtype=torch.bfloat16) if save else None)
    ne, h, bn, ip = layer.wg.shape[0], layer.H, layer.cfg.bn_gu, layer.Ip
    gu = layer.wg.view(ne, h, ip // bn, 2, bn)
    wg = gu[:, :, :, 0].reshape(ne, h, ip)[..., : layer.I].float()
    wu = gu[:, :, :, 1].reshape(ne, h, ip)[..., : layer.I].float()
    wd = layer.wd[:, : layer.I].float()
    el = layer.el
    routed = [r * (el + 1) + j for r in range(layer.vranks) for j in range(el)]
    sh = (wg[el], wu[el], wd[el]) if layer.has_shared else (None, None, None)
    w = ref.MoEWeights(wg[routed], wu[routed], wd[routed], *sh)
    if not hasattr(layer, "out_cpu"):
        layer.out_cpu = torch.empty(x_all.shape, dtype=torch.bfloat16)
    layer.out_cpu.copy_(ref.moe_reference(x_all.float(), ids_all, w_all, w))
    return layer.out_cpu


class CpuMegakernel(MegakernelForward):
    def why_not(self, x, w, topk):
        return None


@pytest.mark.parametrize("ep,n,bucket", [(1, 50, 1), (4, 50, 1), (4, 48, 1), (1, 50, 16), (4, 50, 8)])
def test_megakernel_forward_reloads_weights_and_pads(monkeypatch, ep, n, bucket):
    from mok_kernels.megakernel import KernelConfig, MoKLayer
    monkeypatch.setattr(MoKLayer, "forward", reference_launch)
    cfg = KernelConfig(dispatch="pull", combine="push", minibatch=256, comm_sms=8, macrobatch=512,
                       capacity=1.0, on_error="raise")
    fwd = CpuMegakernel(ep=ep, cfg=cfg, bucket=bucket)
    x, ids, tw, _, _ = setup("zipf:1.5", True)
    x, ids, tw = x[:n], ids[:n], tw[:n]
    outs = []
    for seed in (0, 1):   # a training step changes the weights: the second call reloads them
        w = ref.random_weights(E, H, I, I, seed=10 + seed)
        out = fwd(x, ids, tw, w)
        want = ref.moe_reference(x.to(torch.bfloat16).float(), ids, tw, w.to(torch.bfloat16).to(torch.float32))
        assert out.shape == (n, H) and out.dtype == x.dtype
        assert rel(out, want) <= 1e-2
        outs.append(out)
    assert len(fwd.layers) == 1                     # one layer, reused
    (layer,) = fwd.layers.values()
    assert layer.tokens * ep >= n and layer.tokens % bucket == 0
    assert not torch.equal(outs[0], outs[1])        # the reused output buffer was copied out
    # gradients flow through the Function with this forward
    xs = x.clone().requires_grad_()
    mok_moe(xs, ids, tw, w, backend=fwd).sum().backward()
    assert xs.grad is not None and torch.isfinite(xs.grad).all()
    bad = ids.clone()
    bad[0, 1] = bad[0, 0]
    with pytest.raises(ValueError, match="distinct"):   # refused before any launch
        mok_moe(x, bad, tw, w, backend=fwd)


def test_backward_reloads_weights_only_where_the_layer_holds_others(monkeypatch):
    """layer_for: a forward always loads; the backward (reload=False) loads only where the
    layer's buffers hold other weights: another layer of the same shape ran since, or these
    were written in place."""
    from mok_kernels.megakernel import KernelConfig, MoKLayer
    loads = []
    real = MoKLayer.load_weights
    monkeypatch.setattr(MoKLayer, "load_weights", lambda self, w: (loads.append(w), real(self, w)))
    cfg = KernelConfig(dispatch="pull", combine="push", minibatch=256, comm_sms=8, macrobatch=512,
                       capacity=1.0, on_error="raise")
    fwd = CpuMegakernel(ep=2, cfg=cfg)
    a, b = (ref.random_weights(E, H, I, I, seed=s) for s in (1, 2))
    lay = fwd.layer_for(32, K, a, torch.device("cpu"))            # built: holds a
    assert fwd.layer_for(32, K, a, torch.device("cpu"), reload=False) is lay and loads == []
    fwd.layer_for(32, K, a, torch.device("cpu"))                  # a forward: loads anyway
    assert len(loads) == 1
    fwd.layer_for(32, K, b, torch.device("cpu"), reload=False)    # another layer's weights
    fwd.layer_for(32, K, b, torch.device("cpu"), reload=False)
    assert [w is b for w in loads] == [False, True]
    b.wd.mul_(2.0)                                                # written in place
    fwd.layer_for(32, K, b, torch.device("cpu"), reload=False)
    assert len(loads) == 3


def test_plain_training_loop_matches_reference_loss_curve():
    """A tiny model (router + MoE layer + head) trained 6 SGD steps: the loss curve of the
    Function equals that of float32 autograd through the reference."""
    torch.manual_seed(0)
    vocab, e, h, i, k, n = 32, 8, 32, 16, 2, 64

    def model_params(seed):
        g = torch.Generator().manual_seed(seed)
        w = ref.random_weights(e, h, i, i, seed=seed)
        emb = torch.randn(vocab, h, generator=g) * 0.5
        router = torch.randn(h, e, generator=g) / h ** 0.5
        head = torch.randn(h, vocab, generator=g) / h ** 0.5
        return [emb, router, head, w.wg, w.wu, w.wd, w.sg, w.su, w.sd]

    g = torch.Generator().manual_seed(1)
    tokens = torch.randint(0, vocab, (n,), generator=g)
    target = torch.randint(0, vocab, (n,), generator=g)

    def train(layer_fn):
        ps = [p.clone().requires_grad_() for p in model_params(2)]
        opt = torch.optim.SGD(ps, lr=0.5)
        losses = []
        for _ in range(6):
            emb, router, head, *ws = ps
            x = emb[tokens]
            probs = torch.softmax(x @ router, dim=-1)
            tw, ids = probs.topk(k, dim=-1)
            y = x + layer_fn(x, ids, tw / tw.sum(-1, keepdim=True), ref.MoEWeights(*ws))
            loss = torch.nn.functional.cross_entropy(y @ head, target)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return losses

    got = train(lambda *a: mok_moe(*a, backend="torch"))
    want = train(ref.moe_reference)
    assert got[-1] < got[0]
    assert max(abs(a - b) / b for a, b in zip(got, want)) <= 1e-5


# --- the training default: g/u saved when a backward follows, the fastest measured tiles --------

def test_training_default_saves_gu_with_the_fastest_measured_tiles():
    from mok_kernels.autograd import default_megakernel
    from mok_kernels.backward import BackwardTiles, parse_tiles, recompute_tiles, training_tiles
    # calibration/runs/h200/bwd_saved.jsonl, bwd_direct.jsonl, mok_kernels/logs_s32/probe_a_epi2.log
    fastest = BackwardTiles(saved_gu=True, bn_a=256, a_epi=128, bn_x=256, w_direct=True)
    assert training_tiles() == fastest
    for fwd in (MegakernelForward(), MegakernelForward(ep=4), default_megakernel()):
        assert fwd.save and fwd.cfg.save_for_backward
        assert fwd.cfg.capacity == 1.0 and fwd.cfg.on_error == "raise" and fwd.cfg.precision == "bf16"
        assert fwd.bwd_tiles == fastest and fwd.tiles_for(True) == fastest
        assert fwd.tiles_for(False) == recompute_tiles() == BackwardTiles(w_direct=True)
    # what `mok bench --pass bwd` times as "default" and the model is fitted on: unchanged
    assert BackwardTiles() == parse_tiles("default")
    assert (BackwardTiles().saved_gu, BackwardTiles().bn_a, BackwardTiles().bn_x) == (False, 64, 128)
    from mok_kernels.megakernel import KernelConfig
    assert not KernelConfig().save_for_backward                 # inference / bench: off


def test_training_default_opt_outs_and_user_choices():
    from mok_kernels.backward import BackwardTiles, parse_tiles, recompute_tiles, training_tiles
    from mok_kernels.megakernel import KernelConfig
    off = MegakernelForward(save_for_backward=False)
    assert not off.save and not off.cfg.save_for_backward and off.bwd_tiles == recompute_tiles()
    assert off.cfg.capacity == 1.0 and off.cfg.on_error == "raise"
    # the user's own config or tiles decide
    mine = KernelConfig(capacity=1.0, minibatch=2048)
    fwd = MegakernelForward(cfg=mine)
    assert not fwd.save and fwd.cfg is mine and fwd.bwd_tiles == recompute_tiles()
    fwd = MegakernelForward(cfg=KernelConfig(capacity=1.0, save_for_backward=True))
    assert fwd.save and fwd.bwd_tiles == training_tiles()
    fwd = MegakernelForward(cfg=mine, save_for_backward=True)   # the keyword wins, on a copy
    assert fwd.save and fwd.cfg.save_for_backward and fwd.cfg.minibatch == 2048
    assert not mine.save_for_backward
    fwd = MegakernelForward(bwd_tiles=BackwardTiles())          # recomputing tiles: no save
    assert not fwd.save and not fwd.cfg.save_for_backward
    tiles = parse_tiles("saved_gu=1,bn_a=64")
    fwd = MegakernelForward(bwd_tiles=tiles)
    assert fwd.save and fwd.bwd_tiles is tiles and fwd.tiles_for(True) is tiles
    with pytest.raises(ValueError, match="saved_gu"):
        MegakernelForward(save_for_backward=False, bwd_tiles=training_tiles())
    with pytest.raises(ValueError, match="saved_gu"):
        MegakernelForward(cfg=mine, bwd_tiles=training_tiles())
    with pytest.raises(ValueError, match="BF16 only"):
        MegakernelForward(cfg=KernelConfig(precision="fp8"), save_for_backward=True)
    fp8 = MegakernelForward(cfg=KernelConfig(precision="fp8"))  # an FP8 config: nothing saved
    assert not fp8.save and fp8.bwd_tiles == recompute_tiles()
    for diag in ("skip_copy", "skip_gemm"):       # timing diagnostics never train
        with pytest.raises(ValueError, match=f"^{diag}=True in the autograd path"):
            MegakernelForward(cfg=KernelConfig(**{diag: True}), save_for_backward=False)


@pytest.mark.parametrize("ep", [1, 4])
def test_forward_saves_gu_only_when_a_backward_follows(monkeypatch, ep):
    """The default keeps g/u exactly for calls autograd will differentiate: not under no_grad or
    inference_mode, not when no input requires grad, never with save_for_backward=False."""
    from mok_kernels.megakernel import KernelConfig, MoKLayer
    monkeypatch.setattr(MoKLayer, "forward", reference_launch)
    knobs = dict(dispatch="pull", combine="push", minibatch=256, comm_sms=8, macrobatch=512)
    x, ids, tw, w, _ = setup("zipf:1.5", True)

    def calls(fwd, fn):
        fn(fwd)
        (layer,) = fwd.layers.values()
        got = layer.save_calls[:]
        layer.save_calls.clear()
        return got

    fwd = CpuMegakernel(ep=ep, cfg=KernelConfig(**knobs, capacity=1.0, on_error="raise"),
                        save_for_backward=True)
    t = fwd.bwd_tiles
    assert t.saved_gu and (t.bn_a, t.a_epi, t.bn_x) == (256, 128, 256)
    xs = x.clone().requires_grad_()
    out = None

    def train(f):
        nonlocal out
        out = mok_moe(xs, ids, tw, w, backend=f)

    assert calls(fwd, train) == [True]
    gu = out.grad_fn.saved_tensors[-1]              # held by the graph, not by the forward
    assert gu is not None and gu.dtype == torch.bfloat16
    assert fwd.take_saved_gu() is None and next(iter(fwd.layers.values())).saved_gu is None
    out.sum().backward()                            # CPU: the PyTorch backward
    assert torch.isfinite(xs.grad).all()
    wr = ref.MoEWeights(*(t.clone().requires_grad_() for t in (w.wg, w.wu, w.wd, w.sg, w.su, w.sd)))
    assert calls(fwd, lambda f: mok_moe(x, ids, tw, wr, backend=f)) == [True]   # weights only
    twr = tw.clone().requires_grad_()
    assert calls(fwd, lambda f: mok_moe(x, ids, twr, w, backend=f)) == [True]   # router only

    def no_grad(f):
        with torch.no_grad():
            o = mok_moe(xs, ids, tw, w, backend=f)
        assert o.grad_fn is None

    def inference(f):
        with torch.inference_mode():
            mok_moe(xs, ids, tw, w, backend=f)

    assert calls(fwd, no_grad) == [False]
    assert calls(fwd, inference) == [False]
    assert calls(fwd, lambda f: mok_moe(x, ids, tw, w, backend=f)) == [False]   # nothing trainable
    # activation checkpointing: the reentrant form's first pass runs under no_grad (no save);
    # the non-reentrant form's saved-tensor hooks drop g, u with the inputs; both recompute
    # (and save) in the backward
    from torch.utils.checkpoint import checkpoint
    for reentrant, want in ((True, [False, True]), (False, [True, True])):
        xc = x.clone().requires_grad_()

        def ckpt(f, xc=xc, reentrant=reentrant):
            checkpoint(lambda a: mok_moe(a, ids, tw, w, backend=f), xc,
                       use_reentrant=reentrant).sum().backward()

        assert calls(fwd, ckpt) == want
        assert torch.equal(xc.grad, xs.grad)
    assert fwd.take_saved_gu() is None
    off = CpuMegakernel(ep=ep, cfg=KernelConfig(**knobs, capacity=1.0, on_error="raise"),
                        save_for_backward=False)
    assert calls(off, train) == [False] and out.grad_fn.saved_tensors[-1] is None
