"""GPU tests of training with the MoK layer: mok_kernels.autograd with the real megakernel forward
against float32 autograd through the reference, and a few training steps (skipped without CUDA;
no transformers needed)."""

from __future__ import annotations

import pytest
import torch

from mok_kernels import reference as ref
from mok_kernels.routing import make_routing

pytestmark = pytest.mark.gpu
if not torch.cuda.is_available():  # pragma: no cover - CPU CI
    pytest.skip("needs a CUDA GPU", allow_module_level=True)

from mok_kernels.autograd import MegakernelForward, mok_moe  # noqa: E402
from mok_kernels.megakernel import KernelConfig  # noqa: E402

# a small production-like layer: 64 experts, top-8, hidden 2048, expert width 768, shared expert
E, K, H, I = 64, 8, 2048, 768


def rel(a: torch.Tensor, b: torch.Tensor) -> float:
    a, b = a.detach().double(), b.detach().double()
    assert torch.isfinite(a).all()
    return float((a - b).norm() / b.norm().clamp_min(1e-30))


def inputs(n: int, routing: str, seed: int = 0):
    w = ref.random_weights(E, H, I, I, seed=seed, device="cuda")     # float32 master weights
    g = torch.Generator(device="cuda").manual_seed(seed + 1)
    x = torch.randn(n, H, device="cuda", generator=g).to(torch.bfloat16)
    cot = torch.randn(n, H, device="cuda", generator=g)
    if routing == "idle":      # every route on the first half of the experts
        ids, tw = make_routing(n, E // 2, K, "uniform", seed, device="cuda")
    else:
        ids, tw = make_routing(n, E, K, routing, seed, device="cuda")
    return x, ids, tw, w, cot


def grads(fn, x, ids, tw, w, cot):
    xs = x.detach().clone().requires_grad_()
    ts = tw.detach().clone().requires_grad_()
    ps = [t.detach().clone().requires_grad_() for t in (w.wg, w.wu, w.wd, w.sg, w.su, w.sd)]
    out = fn(xs, ids, ts, ref.MoEWeights(*ps))
    (out.float() * cot).sum().backward()
    return [out, xs.grad, ts.grad] + [p.grad for p in ps]


@pytest.mark.parametrize("ep,n,routing,save", [(1, 1024, "uniform", None), (1, 1024, "zipf:1.2", None),
                                               (1, 1024, "onehot", None), (1, 1024, "idle", None),
                                               (4, 1022, "uniform", None), (4, 1024, "onehot", None),
                                               (1, 1024, "uniform", False), (4, 1022, "uniform", False)])
def test_megakernel_forward_gradients_match_fp32_reference(ep, n, routing, save):
    """save None: the training default (g/u saved, training_tiles()); False: the opt-out
    (nothing saved, the recomputing backward with BackwardTiles())."""
    x, ids, tw, w, cot = inputs(n, routing)
    fwd = MegakernelForward(ep=ep, save_for_backward=save)
    got = grads(lambda *a: mok_moe(*a, backend=fwd), x, ids, tw, w, cot)
    assert len(fwd.layers) == 1, "the megakernel forward did not run"
    layer = next(iter(fwd.layers.values()))
    attr = "mok_backward" if save is False else "mok_backward_saved"
    assert getattr(layer, attr, None) is not None, f"the backward megakernel did not run ({attr})"
    assert getattr(layer, attr).tiles == fwd.bwd_tiles
    want = grads(ref.moe_reference, x, ids, tw, w, cot)
    assert got[0].dtype == torch.bfloat16
    assert rel(got[0], want[0]) <= 1e-2                       # bf16 forward
    for a, b in zip(got[1:], want[1:]):                       # gradients
        assert rel(a, b) <= 2e-2


def test_explicit_knobs_and_bits_identical_over_runs():
    x, ids, tw, w, cot = inputs(1024, "zipf:1.2")
    cfg = KernelConfig(dispatch="pull", combine="push", minibatch=2048, comm_sms=16,
                       macrobatch=131072, capacity=1.0, on_error="raise")
    fwd = MegakernelForward(cfg=cfg)
    first = grads(lambda *a: mok_moe(*a, backend=fwd), x, ids, tw, w, cot)
    second = grads(lambda *a: mok_moe(*a, backend=fwd), x, ids, tw, w, cot)
    for a, b in zip(first, second):
        assert torch.equal(a, b)
    want = grads(ref.moe_reference, x, ids, tw, w, cot)
    assert rel(first[0], want[0]) <= 1e-2


def test_training_steps_megakernel_vs_torch_forward():
    """8 SGD steps of a tiny model (embedding, router, MoE layer with a shared expert, head):
    the megakernel forward (weights reloaded every step) follows the float32 PyTorch forward's
    loss curve, and the loss falls."""
    vocab, e, h, i, k, n = 512, 32, 512, 256, 4, 2048
    g = torch.Generator(device="cuda").manual_seed(0)
    tokens = torch.randint(0, vocab, (n,), device="cuda", generator=g)
    target = (tokens * 7 + 3) % vocab                  # a mapping the model can learn

    def train(backend):
        w = ref.random_weights(e, h, i, i, seed=3, device="cuda")
        gg = torch.Generator(device="cuda").manual_seed(4)
        emb = torch.randn(vocab, h, device="cuda", generator=gg) * 0.5
        router = torch.randn(h, e, device="cuda", generator=gg) / h ** 0.5
        head = torch.randn(h, vocab, device="cuda", generator=gg) / h ** 0.5
        ps = [t.requires_grad_() for t in (emb, router, head, w.wg, w.wu, w.wd, w.sg, w.su, w.sd)]
        opt = torch.optim.SGD(ps, lr=0.5)
        losses = []
        for _ in range(8):
            emb_, router_, head_, *ws = ps
            x = emb_[tokens]
            tw, ids = torch.softmax(x @ router_, dim=-1).topk(k, dim=-1)
            y = x + mok_moe(x.to(torch.bfloat16), ids, tw / tw.sum(-1, keepdim=True),
                            ref.MoEWeights(*ws), backend=backend).float()
            loss = torch.nn.functional.cross_entropy(y @ head_, target)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return losses

    fwd = MegakernelForward()
    got = train(fwd)
    assert len(fwd.layers) == 1
    want = train("torch")
    assert got[-1] < 0.9 * got[0]
    assert max(abs(a - b) / b for a, b in zip(got, want)) <= 2e-2, (got, want)


@pytest.mark.parametrize("ep,n,routing", [(1, 1024, "uniform"), (1, 1024, "zipf:1.2"),
                                          (1, 1024, "idle"), (4, 1022, "onehot")])
def test_saved_gu_gradients_match_fp32_reference(ep, n, routing):
    """KernelConfig(save_for_backward=True): the forward keeps g and u, the backward megakernel
    reads them (BackwardTiles(saved_gu=True)); same tolerances, and the same outputs as without."""
    x, ids, tw, w, cot = inputs(n, routing)
    fwd = MegakernelForward(ep=ep, cfg=KernelConfig(capacity=1.0, on_error="raise",
                                                    save_for_backward=True))
    got = grads(lambda *a: mok_moe(*a, backend=fwd), x, ids, tw, w, cot)
    layer = next(iter(fwd.layers.values()))
    assert getattr(layer, "mok_backward_saved", None) is not None, "the saved path did not run"
    assert layer.saved_gu is None and fwd.take_saved_gu() is None    # handed to the graph
    want = grads(ref.moe_reference, x, ids, tw, w, cot)
    assert rel(got[0], want[0]) <= 1e-2
    for a, b in zip(got[1:], want[1:]):
        assert rel(a, b) <= 2e-2
    plain = grads(lambda *a: mok_moe(*a, backend=MegakernelForward(ep=ep, save_for_backward=False)),
                  x, ids, tw, w, cot)
    assert torch.equal(got[0], plain[0])          # saving changes nothing in the forward


def test_saved_gu_two_layers_of_one_shape_and_bits_identical():
    """Two MoE layers of one shape share the MoKLayer: each forward's g, u must reach its own
    backward (a layer-owned buffer would be overwritten by the second forward)."""
    x, ids, tw, w, cot = inputs(1024, "zipf:1.2")
    w2 = ref.random_weights(E, H, I, I, seed=5, device="cuda")
    cfg = KernelConfig(capacity=1.0, on_error="raise", save_for_backward=True)

    def two_layers(backend):
        def fn(xs, ids_, ts, w1):
            mid = mok_moe(xs, ids_, ts, w1, backend=backend)
            return mok_moe(mid, ids_.flip(0), ts.flip(0), w2, backend=backend)
        return fn

    fwd = MegakernelForward(cfg=cfg)
    got = grads(two_layers(fwd), x, ids, tw, w, cot)
    again = grads(two_layers(fwd), x, ids, tw, w, cot)
    for a, b in zip(got, again):
        assert torch.equal(a, b)
    want = grads(two_layers(MegakernelForward(save_for_backward=False)), x, ids, tw, w, cot)  # recomputing
    for a, b in zip(got[1:], want[1:]):
        assert rel(a, b) <= 2e-2


def test_default_saves_nothing_without_a_backward():
    """The training default keeps g/u only for calls autograd will differentiate: under no_grad
    the layer's forward allocates no saved tensor, and the output's bits are the same."""
    x, ids, tw, w, _ = inputs(1024, "uniform")
    fwd = MegakernelForward()
    xs = x.clone().requires_grad_()
    out = mok_moe(xs, ids, tw, w, backend=fwd)
    assert out.grad_fn.saved_tensors[-1] is not None
    with torch.no_grad():
        inf = mok_moe(xs, ids, tw, w, backend=fwd)
    layer = next(iter(fwd.layers.values()))
    assert layer.saved_gu is None and fwd.take_saved_gu() is None
    assert torch.equal(out.detach(), inf)
