"""What saving g and u costs the forward (KernelConfig(save_for_backward=True)): one emulated
rank's MoK forward timed with and without the save, same knobs, same run, eager (the save
allocates a fresh tensor per call, as training does), medians of CUDA-event times. Prints one
line per workload; writes no records (the saving forward is not a kernel variant the model
fits).

    PYTHONPATH=. python benchmarks/bwd_saved_fwd_cost.py --model kimi-k2,glm-5 --tokens 1024,4096
"""

from __future__ import annotations

import argparse
import functools

import torch

from mok_kernels.bench import Workload, time_events
from mok_kernels.megakernel import KernelConfig, MoKLayer


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="kimi-k2,glm-5")
    p.add_argument("--tokens", default="1024,4096")
    p.add_argument("--routing", default="uniform")
    p.add_argument("--ep", type=int, default=8)
    p.add_argument("--iters", type=int, default=10)
    a = p.parse_args()
    for model in a.model.split(","):
        for n in (int(t) for t in a.tokens.split(",")):
            wl = Workload(model, a.ep, n, a.routing, 0, 0)
            ms = {}
            for save in (False, True):
                cfg = KernelConfig(dispatch="pull", combine="push", minibatch=4096, comm_sms=32,
                                   macrobatch=131072, capacity=1.0, save_for_backward=save)
                layer = MoKLayer(wl.w, a.ep, n, wl.shape.topk, 0, cfg, local_weights=True)
                step = functools.partial(layer.forward, wl.x, wl.ids, wl.wts)
                step()
                torch.cuda.synchronize()
                layer.check()
                t = sorted(time_events(step, wl.refresh, a.iters, 3))
                ms[save] = t[len(t) // 2]
                gb = 0 if layer.saved_gu is None else layer.saved_gu.numel() * 2 / 1e9
                layer.close()
                del layer
            print(f"{model:8s} ep{a.ep} n{n:<5d} {a.routing}: forward {ms[False]:.3f} ms, with "
                  f"save_for_backward {ms[True]:.3f} ms ({ms[True] / ms[False] - 1:+.1%}), "
                  f"saved {gb:.3f} GB per layer", flush=True)


if __name__ == "__main__":
    main()
