"""What a training step's backward costs through the autograd path (`mok_moe` with the
megakernel): `loss.backward()` timed with CUDA events (the forward runs untimed before each
iteration, with fresh output gradients), bfloat16 parameters, EP 1, for each backward tile set
given, in one run; the gradients of the last iteration of each set are compared with the first
set's, bit for bit. Prints one line per set; writes no records (this times the layer's autograd
path, not a kernel the model fits: the weight-gradient unpacking and casting are in it).

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
    return run_tool(p, run, argv)


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
        for spec, tiles in zip(a.tiles.split(";"), sets):
            t, grads = time_backward(MegakernelForward(bwd_tiles=tiles), x, ids, wts, w, params,
                                     a.iters)
            same = "" if first is None else (
                "; gradients bit-identical to the first set" if all(
                    torch.equal(u, v) for u, v in zip(first, grads)) else
                "; GRADIENTS DIFFER from the first set")
            first = first or grads
            print(f"H {h} I {i} E {e} top-{k} n {n}: backward median {t[len(t) // 2]:.3f} ms, "
                  f"max {t[-1]:.3f} ms (of {a.iters}), tiles {spec}{same}", flush=True)
            torch.cuda.empty_cache()


def time_backward(fwd, x, ids, wts, w, params, iters):
    """Sorted backward times (ms) of mok_moe through ``fwd`` (forward untimed before each, output
    gradients drawn from seed 100 + iteration) and the last iteration's gradients."""
    dev = x.device
    dout = torch.empty_like(x)
    out = {}

    def refresh(it: int) -> None:
        for p in (*params, x):
            p.grad = None
        dout.normal_(generator=torch.Generator(device=dev).manual_seed(100 + max(it, 0)))
        out["y"] = mok_moe(x, ids, wts, w, backend=fwd)

    t = sorted(time_events(lambda: out["y"].backward(dout), refresh, iters, 2))
    return t, [p.grad.clone() for p in (*params, x)]

if __name__ == "__main__":
    sys.exit(main())
