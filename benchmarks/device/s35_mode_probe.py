"""Session 35: do the mode words (PUSH_DISPATCH, PULL_COMBINE, JOIN) cost the compiled kernel?

They are runtime ints of the forward megakernel, so Triton specializes only the value 1: a push
combine (PULL_COMBINE 0) and a pull dispatch (PUSH_DISPATCH 0) compile every mode's branches into
one kernel. For four workloads (the seed-13 push/push miss, kimi-k2 and glm-5 at EP 8, the
narrow qwen3-30b-a3b), each of the four dispatch/combine modes: the compiled kernel's registers,
spills and shared memory, the output checked against float32, then the time (CUDA graph,
events, warm-up, median of fresh inputs) beside the GEMMs alone. s35_mode_ab.sh runs it twice:
as committed, then with the three words made tl.constexpr (one kernel per mode).
Usage (device): python3 benchmarks/device/s35_mode_probe.py LABEL [deadline_s]
"""

import statistics
import sys
import time

import torch

from mok_kernels.bench import Workload, capture_graph, run_gemm_only, time_events
from mok_kernels.megakernel import KernelConfig, MoKLayer, _kernels
from mok_kernels.tile_sweep import TOL, check

WORKLOADS = [  # (model, EP, tokens, routing, seed, (minibatch, comm SMs) settings)
    ("calibration/drawn_shapes/seed13/syn13-h1536-i1600-e16-k3.toml", 16, 6144, "zipf:1.2", 13,
     [(512, 8), (512, 32)]),
    ("kimi-k2", 8, 4096, "uniform", 0, [(4096, 32), (2048, 16)]),
    ("glm-5", 8, 4096, "uniform", 0, [(4096, 32)]),
    ("qwen3-30b-a3b", 8, 4096, "uniform", 0, [(4096, 32)]),
]
MODES = [("pull", "push"), ("push", "push"), ("push", "pull"), ("pull", "pull")]


def compiled_stats() -> list[str]:
    """Registers, spills and shared bytes of every compiled variant of the forward kernel."""
    out = []
    fn = _kernels()["mok"]
    for cache in getattr(fn, "device_caches", {}).values():
        kernels = cache[0] if isinstance(cache, tuple) else cache
        for k in getattr(kernels, "values", lambda: [])():
            md = getattr(k, "metadata", None)
            out.append(f"regs {getattr(k, 'n_regs', '?')} spills {getattr(k, 'n_spills', '?')} "
                       f"shared {getattr(md, 'shared', '?')} warps {getattr(md, 'num_warps', '?')}")
    return out


def main() -> None:
    label = sys.argv[1]
    deadline = float(sys.argv[2]) if len(sys.argv) > 2 else 200.0
    t0 = time.time()
    for model, ep, tokens, routing, seed, settings in WORKLOADS:
        wl = Workload(model, ep, tokens, routing, seed, 0)
        gemm = statistics.median(run_gemm_only(wl, 10, 3))
        name = model.split("/")[-1].removesuffix(".toml")
        print(f"[{label}] {name} EP {ep} {tokens} {routing}: GEMMs alone {gemm:.3f} ms", flush=True)
        for mb, comm in settings:
            for dispatch, combine in MODES:
                if time.time() - t0 > deadline:
                    print(f"[{label}] deadline", flush=True)
                    return
                tag = f"[{label}] {name} {dispatch}/{combine}/{mb}/{comm}"
                try:
                    layer = MoKLayer(wl.w, wl.ep, wl.tokens, wl.shape.topk, 0,
                                     KernelConfig(dispatch=dispatch, combine=combine, minibatch=mb,
                                                  comm_sms=comm, on_error="raise"),
                                     local_weights=True)
                    fwd = lambda lay=layer, w=wl: lay.forward(w.x, w.ids, w.wts)  # noqa: E731
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
                except Exception as exc:  # noqa: BLE001 (a compile error of one variant too)
                    print(f"{tag}: FAILED {type(exc).__name__}: {str(exc)[:160]}", flush=True)
                    continue
                med = statistics.median(ts)
                print(f"{tag}: {med:.3f} ms ({med / gemm:.3f}x GEMMs; min {min(ts):.3f} max "
                      f"{max(ts):.3f}; err {err:.1e})", flush=True)
                del layer, fwd, graph
                torch.cuda.empty_cache()
        torch.cuda.empty_cache()
    for line in sorted(set(compiled_stats())):
        print(f"[{label}] compiled: {line}", flush=True)
    print(f"[{label}] done at {time.time() - t0:.0f} s", flush=True)


if __name__ == "__main__":
    main()
