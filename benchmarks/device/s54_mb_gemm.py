"""Session 54: is the cost the model misses at minibatch 512 on wide H in the GEMM phases?

The shipped h200-1 model reads MoK passes with H >= 6,144 at minibatch 512 about 8.6% fast
(n 67; mok_kernels/logs_s53/residual_by_minibatch_h_bins.txt), about 9 us a minibatch, and
H 5,120 about 4 us; H <= 4,096 within 1 us. The model's GEMM efficiency does not depend on the
minibatch. Written before the run, the hypothesis: the kernel's own GEMM phases (copies skipped,
all SMs computing) at minibatch 512 run >= 5% slower than at 4,096 on kimi-k2 and glm-5 (a
minibatch holds about 4 row tiles of 1-2 experts, so fewer concurrent row tiles share each
weight block read), and within 2% on qwen3-235b-a22b. If the GEMM phases do not move, the cost
is in the pass's copies or signals.

Second call (after the first's table, same session): the same at work-list lag 2 (LAGS=1,2):
does the kernel's list (minibatch i's down items right after minibatch i+1's gate/up items)
hold the SMs at minibatch 512? An item-level simulation of the list (calibration/list_check.py
`simulate`, 132 SMs) reads lag 1 at minibatch 512 1.08 / 1.06 / 1.19 / 1.09x minibatch 4,096
for the four workloads and lag 2 within 1.012x; the model's closed form (gemm_table.held_period)
reads 1.00-1.07x.

One GPU emulating EP 8 at 4,096 tokens, uniform routing; per workload and minibatch: the GEMM
phases alone (mok-gemm: skip_copy, dispatch pull, combine push, 32 comm programs that join at
once) and the whole pass (pull / push, 32 comm SMs), graph replay, events, medians of
45 launches after 5 of warm-up, one setting after another (one layer alive at a time: an H100
holds few at kimi-k2), fresh inputs before each launch.

Session 55 (MODELS, GROUP_M (bash reserves GROUPS); written before the run): what does the part lag 2 leaves follow?
If it is a weight re-read at each minibatch boundary inside an expert (the expert's weights
evicted from the L2 by the minibatch between), its cost per minibatch grows with an expert's
weight bytes (H x I): small on the H 2,048 presets (qwen3-30b-a3b, qwen3-next-80b-a3b: <= 2%
at minibatch 512, lag 2), larger on deepseek-v3 and the drawn H 5,632 shape; group_m 8 leaves
it. If it is a fixed cost per minibatch (signals, list bookkeeping), it is about the same in us
a minibatch on every shape, so largest in relative terms on the shortest passes.

    [LAGS=1,2] [GROUP_M=1,8] [MODELS=a,b,...] PYTHONPATH=. python3 benchmarks/device/s54_mb_gemm.py [OUT.json]
"""
import json
import os
import statistics
import sys

import torch

from mok_kernels.bench import Workload, time_events, time_launch, capture_graph
from mok_kernels.megakernel import KernelConfig, MoKLayer

WORKLOADS = tuple(os.environ.get("MODELS", "kimi-k2,glm-5,glm-4.5,qwen3-235b-a22b").split(","))
MINIBATCHES = (512, 1024, 4096)
BASE = dict(dispatch="pull", combine="push", comm_sms=32, macrobatch=131072, capacity=1.0)
LAGS = tuple(int(x) for x in os.environ.get("LAGS", "1").split(","))
GROUP_MS = tuple(int(x) for x in os.environ["GROUP_M"].split(",")) if "GROUP_M" in os.environ else (None,)


def gemm_step(wl, mb, lag, gm):
    layer = MoKLayer(wl.w, wl.ep, wl.tokens, wl.shape.topk, wl.rank,
                     KernelConfig(**BASE, minibatch=mb, list_lag=lag, group_m=gm, skip_copy=True),
                     local_weights=True)
    layer.ring.normal_()
    sched = layer.schedule(wl.ids)
    return lambda iters, warm: time_launch(layer, wl.x, sched, lambda i: layer.ring.normal_(),
                                           iters, warm)


def pass_step(wl, mb, lag, gm):
    layer = MoKLayer(wl.w, wl.ep, wl.tokens, wl.shape.topk, wl.rank,
                     KernelConfig(**BASE, minibatch=mb, list_lag=lag, group_m=gm),
                     local_weights=True)
    fwd = lambda: layer.forward(wl.x, wl.ids, wl.wts)  # noqa: E731
    fwd()
    torch.cuda.synchronize()
    layer.check()
    graph = capture_graph(fwd)

    def run(iters, warm):
        t = time_events(graph, wl.refresh, iters, warm)
        layer.check()
        return t
    return run


def main(out: str | None) -> None:
    raw = {}
    print("| workload | group_m | lag | minibatch | GEMM phases ms | / mb 4096 lag 1 | pass ms "
          "| / mb 4096 lag 1 |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for model in WORKLOADS:
        wl = Workload(model, 8, 4096, "uniform", 0, 0)
        med = {}
        for gm in GROUP_MS:
            for lag in LAGS:  # one layer alive at a time (an H100 holds few at kimi-k2)
                for kind in ("gemm", "pass"):
                    for mb in MINIBATCHES:
                        step = (gemm_step if kind == "gemm" else pass_step)(wl, mb, lag, gm)
                        t = step(45, 5)
                        med[(kind, mb, lag, gm)] = statistics.median(t)
                        key = f"{kind}/{mb}/{lag}" + ("" if gm is None else f"/g{gm}")
                        raw.setdefault(model, {})[key] = t
                        del step
                        torch.cuda.empty_cache()
            g0, p0 = med[("gemm", 4096, LAGS[0], gm)], med[("pass", 4096, LAGS[0], gm)]
            for lag in LAGS:
                for mb in MINIBATCHES:
                    g, p = med[("gemm", mb, lag, gm)], med[("pass", mb, lag, gm)]
                    print(f"| {model} | {gm or 'shape'} | {lag} | {mb} | {g:.3f} | {g / g0:.3f} "
                          f"| {p:.3f} | {p / p0:.3f} |", flush=True)
        del wl
        torch.cuda.empty_cache()
    if out:
        with open(out, "w") as f:
            json.dump(raw, f)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
