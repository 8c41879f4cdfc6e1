"""Session 35: the forward's output bits with the mode words as runtime ints and as constexprs.

Prints a SHA-256 of what rank 0 computes (the combine slots of every route it serves, and its
shared-expert rows) for each dispatch/combine mode at 8 and 32 comm SMs on two shapes (glm-5 at
EP 8, the seed-13 drawn shape at EP 16), inputs from a fixed seed. A route's GEMMs do not depend
on the modes or the comm SMs, so every setting of a shape must print the same digest, under
either kernel source (s35_verify.sh runs it once per source). (The layer's own output also holds
the absent peers' slots, which an emulated rank never writes: not compared.)
Usage (device): python3 benchmarks/device/s35_bits.py LABEL
"""

import hashlib
import sys

import torch

from mok_kernels.bench import Workload
from mok_kernels.megakernel import KernelConfig, MoKLayer

SHAPES = [("glm-5", 8, 1024, "uniform", 0),
          ("calibration/drawn_shapes/seed13/syn13-h1536-i1600-e16-k3.toml", 16, 2048, "zipf:1.2", 13)]


def main() -> None:
    label = sys.argv[1]
    for model, ep, tokens, routing, seed in SHAPES:
        torch.manual_seed(0)
        torch.cuda.manual_seed(0)
        wl = Workload(model, ep, tokens, routing, seed, 0)
        flat = wl.ids.reshape(-1)
        served = ((flat >= 0) & (flat < wl.el)).nonzero().squeeze(1)
        for comm in (8, 32):
            for dispatch in ("pull", "push"):
                for combine in ("push", "pull"):
                    layer = MoKLayer(wl.w, wl.ep, wl.tokens, wl.shape.topk, 0,
                                     KernelConfig(dispatch=dispatch, combine=combine, minibatch=512,
                                                  comm_sms=comm, on_error="raise"),
                                     local_weights=True)
                    layer.forward(wl.x, wl.ids, wl.wts)
                    torch.cuda.synchronize()
                    layer.check()
                    mine = [layer.comb[served]] + ([layer.sh_out[:wl.tokens]]
                                                   if wl.w.sg is not None else [])
                    h = hashlib.sha256()
                    for t in mine:
                        h.update(t.contiguous().view(torch.uint8).cpu().numpy().tobytes())
                    digest = h.hexdigest()[:16]
                    name = model.split("/")[-1].removesuffix(".toml")
                    print(f"[{label}] {name} EP {ep} {dispatch}/{combine}/512/{comm}: {digest}",
                          flush=True)


if __name__ == "__main__":
    main()
