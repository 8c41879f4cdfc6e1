"""What saving g and u costs the forward (KernelConfig(save_for_backward=True)): one emulated
rank's MoK forward timed with and without the save, same knobs, same run, eager (the save
allocates a fresh tensor per call, as training does), medians of CUDA-event times. Prints one
line per workload; writes no records (the saving forward is not a kernel variant the model
fits).

    PYTHONPATH=. python benchmarks/bwd_saved_fwd_cost.py --model kimi-k2,glm-5 --tokens 1024,4096
"""

from __future__ import annotations

import functools
import sys

import torch

from mok_kernels import require_cuda
from mok_kernels.bench import MAX_ITERS, Workload, check_workloads, time_events
from mok_kernels.megakernel import KernelConfig, MoKLayer
from mok_kernels.routing import parse_routing, shape_of
from mok_model.cli import distinct, doc_parser, int_at_least, number_list, run_tool


def main(argv: list[str] | None = None) -> int:
    p = doc_parser("benchmarks/bwd_saved_fwd_cost.py", __doc__)
    p.add_argument("--model", default="kimi-k2,glm-5")
    p.add_argument("--tokens", default="1024,4096")
    p.add_argument("--routing", default="uniform")
    p.add_argument("--ep", type=int_at_least(1), default=8)
    p.add_argument("--iters", type=int_at_least(1, MAX_ITERS), default=10)
    return run_tool(p, run, argv)


def run(a) -> None:
    """One line per workload (flags checked first; a CUDA GPU)."""
    tokens = number_list(a.tokens, "--tokens")
    distinct("--tokens", a.tokens)
    models = distinct("--model", a.model)
    for model in models:
        shape = shape_of(model)
        parse_routing(a.routing, shape.topk, shape.experts)
    check_workloads(models, [a.ep], tokens)
    require_cuda()
    for model in a.model.split(","):
        for n in tokens:
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
    sys.exit(main())
