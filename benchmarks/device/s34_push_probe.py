"""Session 34: is the push/push excess a slow dispatch or GEMMs behind it? (one H200, rank 0).

On the seed-13 worst workload (syn13-h1536-i1600-e16-k3, EP 16, 6,144 tokens, zipf:1.2, seed
13; docs/calibration.md "Session 34: the worst misses"), times push dispatch under push and
pull combine at minibatch 512 / 8,192 and 8 / 32 comm SMs, each with the comm programs
joining the compute (join, the default) and without, beside the GEMMs alone. Every setting's
output is checked against float32 before it is timed. A diagnostic log, not run records.
Usage (device): python3 benchmarks/device/s34_push_probe.py [deadline_s]
"""

import statistics
import sys
import time

import torch

from mok_kernels.bench import Workload, capture_graph, run_gemm_only, time_events
from mok_kernels.megakernel import KernelConfig, MoKLayer
from mok_kernels.tile_sweep import TOL, check

SHAPE = "calibration/drawn_shapes/seed13/syn13-h1536-i1600-e16-k3.toml"


def main() -> None:
    deadline = float(sys.argv[1]) if len(sys.argv) > 1 else 90.0
    t0 = time.time()
    wl = Workload(SHAPE, 16, 6144, "zipf:1.2", 13, 0)
    gemm = statistics.median(run_gemm_only(wl, 10, 3))
    print(f"GEMMs alone {gemm:.3f} ms", flush=True)
    for comm in (8, 32):
        for mb in (512, 8192):
            for combine in ("push", "pull"):
                for join in (True, False):
                    if time.time() - t0 > deadline:
                        print("deadline", flush=True)
                        return
                    label = f"push/{combine}/{mb}/{comm} join={int(join)}"
                    knobs = dict(dispatch="push", combine=combine, minibatch=mb, comm_sms=comm)
                    try:
                        layer = MoKLayer(wl.w, wl.ep, wl.tokens, wl.shape.topk, 0,
                                         KernelConfig(**knobs, join=join, on_error="raise"),
                                         local_weights=True)
                        fwd = lambda lay=layer: lay.forward(wl.x, wl.ids, wl.wts)  # noqa: E731
                        fwd()
                        torch.cuda.synchronize()
                        layer.check()
                        err = check(layer, wl)
                        if err > TOL:
                            raise RuntimeError(f"relative error {err:.2e} > {TOL}")
                        layer.cfg.on_error = "trap"   # no host copy inside a graph capture
                        graph = capture_graph(fwd)
                        ts = time_events(graph, wl.refresh, 10, 3)
                        layer.check()
                    except (RuntimeError, ValueError) as exc:
                        print(f"{label}: FAILED {type(exc).__name__}: {str(exc)[:160]}", flush=True)
                        continue
                    med = statistics.median(ts)
                    print(f"{label}: {med:.3f} ms ({med / gemm:.2f}x GEMMs; min {min(ts):.3f} max "
                          f"{max(ts):.3f}; err {err:.1e}) at {time.time() - t0:.0f} s", flush=True)
                    del layer, fwd, graph
                    torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
