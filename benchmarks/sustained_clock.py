"""Sustained BF16 tensor rate, SM clock and power of one GPU under a long GEMM load.

    python benchmarks/sustained_clock.py [--seconds 12] [--n 8192] [--json OUT.json]

A dense n x n x n BF16 matrix product is replayed back to back for --seconds; every 0.5 s the
rate of the last window (CUDA events around its products) and the GPU's SM clock, power draw and
throttle reasons (NVML, when nvidia-ml-py is installed) are printed. Two GPUs of one die (H100,
H200) that differ in sustained clock differ in every compute-bound phase by that ratio, which
the model's presets (spec peak rates) do not say: this measures it.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mok_model.cli import doc_parser, int_at_least, number_at_least, run_tool  # noqa: E402


def nvml_sampler():
    """A function returning {sm_mhz, power_w, throttle} of GPU 0, or None without NVML."""
    try:
        import pynvml
        pynvml.nvmlInit()
        h = pynvml.nvmlDeviceGetHandleByIndex(0)
    except Exception:  # noqa: BLE001 - NVML absent or not usable: rates only
        return None

    def sample() -> dict:
        return {"sm_mhz": pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM),
                "power_w": pynvml.nvmlDeviceGetPowerUsage(h) / 1e3,
                "throttle": int(pynvml.nvmlDeviceGetCurrentClocksThrottleReasons(h))}
    return sample


def run(a) -> int:
    import torch

    from mok_kernels import require_cuda
    from mok_model.fileio import check_output_file

    if a.json is not None:   # checked before the load runs ('' refused, never taken for none)
        check_output_file(a.json, "--json", ".json")
    require_cuda()
    n, dev = a.n, torch.device("cuda")
    x = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
    y = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
    flop = 2.0 * n ** 3
    sample = nvml_sampler()
    for _ in range(3):
        x @ y                                  # warm-up
    torch.cuda.synchronize()
    windows, t_end = [], time.perf_counter() + a.seconds
    while time.perf_counter() < t_end:
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        count, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < 0.5:
            for _ in range(8):
                x @ y
            count += 8
            if count % 64 == 0:              # keep the launch queue short
                torch.cuda.synchronize()
        stop.record()
        stop.synchronize()
        w = {"t_s": round(a.seconds - (t_end - time.perf_counter()), 2),
             "tflops": count * flop / (start.elapsed_time(stop) * 1e-3) / 1e12}
        w.update(sample() if sample else {})
        windows.append(w)
        print(json.dumps(w), flush=True)
    rates = [w["tflops"] for w in windows[len(windows) // 2:]]   # the second half: sustained
    clocks = [w["sm_mhz"] for w in windows[len(windows) // 2:] if "sm_mhz" in w]
    out = {"gpu": torch.cuda.get_device_name(0), "n": n, "seconds": a.seconds,
           "sustained_tflops_median": statistics.median(rates),
           "sustained_sm_mhz_median": statistics.median(clocks) if clocks else None,
           "windows": windows}
    print(f"{out['gpu']}: sustained {out['sustained_tflops_median']:.0f} TF/s (median of the "
          f"second half's 0.5 s windows), SM clock {out['sustained_sm_mhz_median']} MHz")
    if a.json is not None:
        from mok_model.fileio import atomic_write_text
        atomic_write_text(a.json, json.dumps(out, indent=1) + "\n")
    return 0


MAX_SECONDS = 3600.0


def main(argv: list[str] | None = None) -> int:
    p = doc_parser("benchmarks/sustained_clock.py", __doc__)
    p.add_argument("--seconds", type=number_at_least(1, MAX_SECONDS), default=12.0,
                   help=f"length of the load (at most {MAX_SECONDS:g})")
    p.add_argument("--n", type=int_at_least(256, 65536), default=8192,
                   help="matrix size (three n x n BF16 matrices: at most 65536, 25.8 GB)")
    p.add_argument("--json", default=None, help="write the windows and medians here")
    return run_tool(p, run, argv)


if __name__ == "__main__":
    sys.exit(main())
