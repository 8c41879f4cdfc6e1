"""What a training step's backward costs through the autograd path (`mok_moe` with the
megakernel): `loss.backward()` timed with CUDA events (the forward runs untimed before each
iteration, with fresh output gradients; its time is printed too), bfloat16 parameters, EP 1,
for each backward tile set given, in one run; the gradients of the last iteration of each set
are compared with the first set's, bit for bit. ``--before``: each set also as the layer loaded
weights until 2026-12-02 (through _pack's temporaries, and again before every backward). Prints
one line per set; writes no records (this times the layer's autograd path, not a kernel the
model fits: weight loading, the weight-gradient unpacking and casting are in it).

    PYTHONPATH=. python benchmarks/bwd_autograd_cost.py --shape 7168,2048,64,8 --tokens 4096 \
        --tiles "saved_gu=1,bn_a=128,bn_x=256;saved_gu=1,bn_a=128,bn_x=256,w_direct=1"
"""

from __future__ import annotations

import sys

import torch

from mok_kernels import require_cuda
from mok_kernels.autograd import MegakernelForward, mok_moe
from mok_kernels.backward import parse_tiles
from mok_kernels.bench import time_events
from mok_kernels.reference import random_weights
from mok_kernels.routing import make_routing
from mok_model.cli import doc_parser, int_at_least, number_list, run_tool
from mok_model.errors import MokInputError


def main(argv: list[str] | None = None) -> int:
    p = doc_parser("benchmarks/bwd_autograd_cost.py", __doc__)
    p.add_argument("--shape", default="7168,2048,64,8", help="H,I,experts,top-k (shared expert "
                   "of width I)")
    p.add_argument("--tokens", default="4096")
    p.add_argument("--tiles", default="saved_gu=1,bn_a=128,bn_x=256;"
                   "saved_gu=1,bn_a=128,bn_x=256,w_direct=1")
    p.add_argument("--iters", type=int_at_least(1), default=10)
    p.add_argument("--before", action="store_true", help="also time each set with the weight "
                   "loading of before 2026-12-02")
    return run_tool(p, run, argv)


class BeforeLoading(MegakernelForward):
    """The autograd forward with the weight loading used until 2026-12-02: _pack's packed copy,
    then copied into the buffers, on every forward and again before every backward."""

    def layer_for(self, n, topk, w, device, reload=True):
        layer = super().layer_for(n, topk, w, device, reload=False)
        wg, _, wd, _, _ = layer._pack(w)
        layer.wg.copy_(wg)
        layer.wd.copy_(wd)
        return layer


def run(a) -> None:
    """One line per (tokens, tile set) (flags checked first; a CUDA GPU)."""
    dims = number_list(a.shape, "--shape")
    if len(dims) != 4 or dims[3] > dims[2]:
        raise MokInputError(f"--shape {a.shape!r}: H,I,experts,top-k with top-k <= experts")
    h, i, e, k = dims
    try:
        sets = [parse_tiles(t) for t in a.tiles.split(";")]
    except ValueError as exc:
        raise MokInputError(f"--tiles {a.tiles!r}: {exc}") from None
    tokens = number_list(a.tokens, "--tokens")
    require_cuda()
    dev = "cuda"
    w = random_weights(e, h, i, i, seed=0).to(torch.bfloat16, dev)
    params = [t.requires_grad_() for t in (w.wg, w.wu, w.wd, w.sg, w.su, w.sd)]
    for n in tokens:
        ids, wts = make_routing(n, e, k, "uniform", 0, device=dev)
        g = torch.Generator(device=dev).manual_seed(1)
        x = torch.randn(n, h, device=dev, generator=g).to(torch.bfloat16).requires_grad_()
        first = None
        runs = [(spec, tiles, kind) for spec, tiles in zip(a.tiles.split(";"), sets)
                for kind in ((MegakernelForward, BeforeLoading) if a.before else
                             (MegakernelForward,))]
        for spec, tiles, kind in runs:
            t, tf, grads = time_backward(kind(bwd_tiles=tiles), x, ids, wts, w, params, a.iters)
            same = "" if first is None else (
                "; gradients bit-identical to the first set" if all(
                    torch.equal(u, v) for u, v in zip(first, grads)) else
                "; GRADIENTS DIFFER from the first set")
            first = first or grads
            print(f"H {h} I {i} E {e} top-{k} n {n}: backward median {t[len(t) // 2]:.3f} ms, "
                  f"max {t[-1]:.3f} ms (of {a.iters}); forward median {tf[len(tf) // 2]:.3f} ms; "
                  f"tiles {spec}{' (loading as before)' if kind is BeforeLoading else ''}{same}",
                  flush=True)
            torch.cuda.empty_cache()


def time_backward(fwd, x, ids, wts, w, params, iters):
    """Sorted backward times (ms) of mok_moe through ``fwd`` (its forward untimed by the
    backward's events before each, output gradients drawn from seed 100 + iteration), the sorted
    forward times (events of their own), and the last iteration's gradients."""
    dev = x.device
    dout = torch.empty_like(x)
    out, fwd_ms = {}, []

    def refresh(it: int) -> None:
        for p in (*params, x):
            p.grad = None
        dout.normal_(generator=torch.Generator(device=dev).manual_seed(100 + max(it, 0)))
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        out["y"] = mok_moe(x, ids, wts, w, backend=fwd)
        e.record()
        e.synchronize()
        if it >= 0:
            fwd_ms.append(s.elapsed_time(e))

    t = sorted(time_events(lambda: out["y"].backward(dout), refresh, iters, 2))
    return t, sorted(fwd_ms), [p.grad.clone() for p in (*params, x)]

if __name__ == "__main__":
    sys.exit(main())
