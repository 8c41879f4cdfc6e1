"""What a MoK forward spends beside its megakernel, timed as the bench times the pass (CUDA graph
replay, events, warm-up, medians; one GPU, rank 0 of an emulated EP group, the layer's own
knobs): the whole pass, then its three parts each replayed alone (the schedule build, the
megakernel launch, the epilogue's top-k reduction), and torch's sum over the same (tokens, k, H)
bf16 slots as the reduction's library baseline in the same run. Diagnostic: prints a table and
the epilogue's bytes per second, writes no run records.

    PYTHONPATH=. python3 benchmarks/phase_graph.py --workloads qwen3-30b-a3b:8:4096,kimi-k2:8:4096
"""

from __future__ import annotations

import statistics
import sys

import torch

from mok_kernels import require_cuda
from mok_kernels.bench import MAX_ITERS
from mok_model.cli import doc_parser, int_at_least, run_tool


def main(argv: list[str]) -> int:
    p = doc_parser("benchmarks/phase_graph.py", __doc__)
    p.add_argument("--workloads", default="qwen3-30b-a3b:8:4096,kimi-k2:8:4096")
    p.add_argument("--iters", type=int_at_least(1, MAX_ITERS), default=20)
    return run_tool(p, run, argv)


def run(a) -> int:
    """Each workload's pass and parts (flags checked first; a CUDA GPU)."""
    from mok_kernels.tile_sweep import _workloads

    workloads = _workloads(a.workloads)
    require_cuda()
    from mok_kernels.bench import Workload

    print("| workload | knobs | pass ms | schedule | megakernel | epilogue | torch sum "
          "| epilogue GB/s | sum GB/s |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for model, ep, n in workloads:
        print(measure(Workload(model, ep, n, "uniform", 0, 0), a.iters), flush=True)
        torch.cuda.empty_cache()
    return 0


def measure(wl, iters: int) -> str:
    """One workload's table row: the pass and its parts, graph-replayed."""
    from mok_kernels.bench import capture_graph, time_events
    from mok_kernels.megakernel import KernelConfig, MoKLayer

    def timed(fn, refresh=lambda i: None) -> float:
        return statistics.median(time_events(capture_graph(fn), refresh, iters, 3))

    layer = MoKLayer(wl.w, wl.ep, wl.tokens, wl.shape.topk, wl.rank, KernelConfig(),
                     local_weights=True)
    whole = timed(lambda: layer.forward(wl.x, wl.ids, wl.wts), wl.refresh)
    layer.check()
    sched = layer.schedule(wl.ids)
    w_all = wl.wts.float().contiguous()
    t_sched = timed(lambda: layer.schedule(wl.ids))
    t_launch = timed(lambda: layer.launch(wl.x, sched))
    t_epi = timed(lambda: layer.epilogue(w_all, sched))
    layer.check()
    k, h = layer.topk, layer.H
    slots = torch.randn(layer.ns, k, h, dtype=torch.bfloat16, device="cuda")
    t_sum = timed(lambda: slots.sum(dim=1))
    epi_bytes = layer.ns * h * 2 * (k + 1 + int(layer.has_shared))   # slots, out, shared
    sum_bytes = layer.ns * h * 2 * (k + 1)
    kn = layer.cfg.knobs()
    return (f"| {wl.model}:{wl.ep}:{wl.tokens} | {kn['dispatch']}/{kn['combine']} mb "
            f"{kn['minibatch']} comm {kn['comm_sms']} | {whole:.3f} | {t_sched:.3f} | "
            f"{t_launch:.3f} | {t_epi:.3f} | {t_sum:.3f} | {epi_bytes / t_epi / 1e6:.0f} | "
            f"{sum_bytes / t_sum / 1e6:.0f} |")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
