"""GPU: MoKLayer with no knobs given chooses them (mok_kernels/knobs.py) and still computes the
layer: output compared with the float32 reference, as tests/test_kernels_gpu.py does."""

from __future__ import annotations

import pytest
import torch

from mok_kernels import knobs
from mok_kernels import reference as ref
from mok_kernels.routing import make_routing

pytestmark = pytest.mark.gpu
if not torch.cuda.is_available():  # pragma: no cover - CPU CI
    pytest.skip("needs a CUDA GPU", allow_module_level=True)

from mok_kernels.megakernel import KernelConfig, MoKLayer  # noqa: E402

E, K, H, I, N = 32, 4, 256, 128, 200
SHAPE = dict(hidden=H, expert_width=I, routed_experts=E, top_k=K, shared_width=I)


def rel(a: torch.Tensor, b: torch.Tensor) -> float:
    a, b = a.float(), b.float()
    assert torch.isfinite(a).all()
    return float((a - b).norm() / b.norm())


def forward_vs_reference(ep: int, rank: int | None, seed: int = 0, **layer_kw):
    """(relative error of the layer's output, the layer) for a layer built with no knobs."""
    w = ref.random_weights(E, H, I, I, seed=seed).to(torch.bfloat16).to(device="cuda")
    wf = w.to(torch.float32)
    g = torch.Generator(device="cuda").manual_seed(seed + 7)
    x = torch.randn(ep * N, H, device="cuda", generator=g).to(torch.bfloat16)
    ids, wts = make_routing(ep * N, E, K, "uniform", seed, device="cuda")
    layer = MoKLayer(w, ep, N, K, rank, KernelConfig(on_error="raise"), **layer_kw)
    y = ref.routed_outputs(x.float(), ids, wf)                  # (P*N, k, H) every route
    el = E // ep
    if rank is not None:
        served = (ids >= rank * el) & (ids < (rank + 1) * el)
        home = slice(rank * N, (rank + 1) * N)
        fill = (~served[home]).reshape(-1).nonzero().squeeze(1)   # peers' pushed outputs
        layer.comb[rank * N * K + fill] = y[home].reshape(-1, H)[fill].to(torch.bfloat16)
    else:
        served = torch.ones_like(ids, dtype=torch.bool)
        home = slice(0, ep * N)
    layer.comb[served.reshape(-1).nonzero().squeeze(1)] = float("nan")   # poison served slots
    out = layer.forward(x, ids, wts)
    torch.cuda.synchronize()
    layer.check()
    want = ref.combine(ref.shared_output(x[home].float(), wf), y[home], wts[home])
    return rel(out, want), layer


def _hardware() -> str | None:
    """None (chosen from the GPU) on an H200; the H200 preset named explicitly elsewhere."""
    return None if "H200" in torch.cuda.get_device_name() else "h200-1"


@pytest.mark.parametrize("ep,rank", [(4, 1), (4, None)])
def test_layer_without_knobs_matches_reference(ep, rank):
    err, layer = forward_vs_reference(ep, rank, hardware=_hardware())
    assert layer.knob_source.startswith("tuner: h200-1 params "), layer.knob_source
    assert None not in layer.cfg.knobs().values()
    print(f"\nEP {ep} rank {rank}: {layer.cfg.knobs()} ({layer.knob_source}); rel err {err:.2e}")
    assert err <= 1e-2, err


def test_layer_with_knob_table_matches_reference(tmp_path):
    path = tmp_path / "small.json"
    knobs.write_table(path, knobs.build_table("h200-1", SHAPE, 4, [128, 256], command="gpu test"))
    err, layer = forward_vs_reference(4, 2, seed=3, hardware=_hardware(), knob_table=str(path))
    assert layer.knob_source == f"table {path} bucket 256"
    assert err <= 1e-2, err
