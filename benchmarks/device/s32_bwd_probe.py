"""Session 32: registers, spills and time of backward tile variants (one H200, emulated rank 0).

Each variant: the median of 20 timed passes (mok_kernels.bench.run_mok_bwd: events, warm-up,
fresh inputs), beside the same rank's backward GEMMs alone in the same run, and the registers
and spill bytes of the kernel Triton compiled for it. Usage (device):
    python3 benchmarks/device/s32_bwd_probe.py MODEL TOKENS 'tiles1;tiles2;...'
"""

import statistics
import sys

import torch

from mok_kernels import backward
from mok_kernels.bench import Workload, run_gemm_only_bwd, run_mok_bwd


def compiled_kernels() -> dict:
    """Every compiled variant of the backward kernel so far, by cache key."""
    fn = backward._bwd_kernels()["bwd"]
    out = {}
    for cache in fn.device_caches.values():
        for key, k in cache[0].items():
            out[key] = k
    return out


def main() -> None:
    model, tokens, specs = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(";")
    wl = Workload(model, 8, tokens, "uniform", 0, 0)
    gemm = statistics.median(run_gemm_only_bwd(wl, 20, 5))
    print(f"{model} {tokens}: backward GEMMs alone {gemm:.3f} ms", flush=True)
    for spec in specs:
        before = set(compiled_kernels())
        try:
            ts, _ = run_mok_bwd(wl, {"minibatch": tokens, "comm_sms": 32, "capacity": 1.0}, 20, 5, False, False,
                                spec)
        except Exception as e:  # noqa: BLE001 - a probe: report and go on
            print(f"  {spec}: FAILED {type(e).__name__}: {str(e)[:200]}", flush=True)
            continue
        new = [k for key, k in compiled_kernels().items() if key not in before]
        regs = ", ".join(f"{getattr(k, 'n_regs', '?')} regs {getattr(k, 'n_spills', '?')} B spill"
                         for k in new) or "cached"
        med = statistics.median(ts)
        print(f"  {spec}: {med:.3f} ms ({med / gemm:.2f}x GEMMs; p90 "
              f"{sorted(ts)[int(0.9 * len(ts))]:.3f}) [{regs}]", flush=True)
    torch.cuda.synchronize()


if __name__ == "__main__":
    main()
