"""What an FP8 GEMM can gain over BF16 on this GPU, measured with the library (issue 14's goal).

    PYTHONPATH=. python3 benchmarks/fp8_ceiling.py [--rows 4096,16384,32768] [--out FILE.json]

Issue 14 asks the FP8 forward to run >= 1.4x the BF16 megakernel's speed. Our FP8 K loops reach
about 500 TF/s (mok_kernels/NOTES.md "FP8 forward"), under the BF16 kernel's rate. This asks the
question one level down: on the same GPU, how fast are the library's GEMMs at the megakernel's
shapes (a routed expert's gate|up, H -> 2I, and down, I -> H; kimi-k2 H 7168 / I 2048 and
qwen3-30b H 2048 / I 768), in BF16 and in FP8 (e4m3) with per-tensor, per-row and, where the
installed torch and cuBLAS take them, 1x128 / 128x128 block scales (the megakernel's scheme)?
The ratio FP8 / BF16 at the block scales is the most any FP8 kernel with these scales gains from
the GEMMs alone. CUDA events, 10 warm-ups, median of 30, every call on the next of four input
sets (so no operand stays in L2 from the call before). Refused scale layouts are printed, not
hidden.
"""

from __future__ import annotations

import argparse
import json
import sys

SHAPES = {"kimi-k2": (7168, 2048), "qwen3-30b-a3b": (2048, 768)}


SETS = 4


def time_ms(fns, warmup: int = 10, iters: int = 30) -> float:
    """Median ms of calls that cycle through `fns` (one per input set)."""
    import torch
    for i in range(warmup):
        fns[i % len(fns)]()
    start = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    end = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    for i, (s, e) in enumerate(zip(start, end)):
        s.record()
        fns[i % len(fns)]()
        e.record()
    torch.cuda.synchronize()
    return sorted(s.elapsed_time(e) for s, e in zip(start, end))[iters // 2]


def variants(m: int, n: int, k: int) -> dict:
    """{name: zero-argument GEMM of (m, k) x (k, n)} for BF16 and the FP8 scale recipes."""
    import torch
    dev = "cuda"
    a16 = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
    w16 = torch.randn(n, k, device=dev, dtype=torch.bfloat16)     # weights (N, K), K contiguous
    a8, w8 = a16.to(torch.float8_e4m3fn), w16.to(torch.float8_e4m3fn)
    one = torch.ones((), device=dev)
    out = {"bf16": lambda: a16 @ w16.t()}
    out["fp8 per-tensor"] = lambda: torch._scaled_mm(a8, w8.t(), one, one, out_dtype=torch.bfloat16)
    ra, rb = torch.ones(m, 1, device=dev), torch.ones(1, n, device=dev)
    out["fp8 per-row"] = lambda: torch._scaled_mm(a8, w8.t(), ra, rb, out_dtype=torch.bfloat16)
    # 1x128 activation blocks, 128x128 weight blocks; cuBLAS wants the activation scales
    # outer-dim-major (the transpose of a contiguous (K/128, M) tensor)
    ba = torch.ones(k // 128, m, device=dev).t()
    bb = torch.ones(n // 128, k // 128, device=dev).t()
    out["fp8 block 1x128/128x128"] = lambda: torch._scaled_mm(a8, w8.t(), ba, bb,
                                                               out_dtype=torch.bfloat16)
    return out


def main(argv: list[str]) -> int:
    from mok_model.cli import doc_parser, run_tool

    p = doc_parser("benchmarks/fp8_ceiling.py", __doc__)
    p.add_argument("--rows", default="4096,16384,32768", help="comma list of GEMM rows (M)")
    p.add_argument("--out", default=None, help="JSON file for the results")
    return run_tool(p, _run, argv)


def _run(a: argparse.Namespace) -> int:
    import torch

    from mok_kernels import require_cuda
    from mok_model.cli import number_list
    from mok_model.fileio import atomic_write_text, check_output_file

    from mok_model.cli import distinct
    from mok_model.scenario import KNOB_MAX

    rows = number_list(a.rows, "--rows", high=KNOB_MAX)
    distinct("--rows", a.rows)
    if a.out is not None:     # '' is refused, never taken for no file
        check_output_file(a.out, "--out", ".json")
    require_cuda()
    results = []
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}")
    for model, (h, i) in SHAPES.items():
        for phase, (n, k) in (("gate|up", (2 * i, h)), ("down", (h, i))):
            for m in rows:
                line, bf16 = {}, None
                sets = [variants(m, n, k) for _ in range(SETS)]
                for name in sets[0]:
                    try:
                        ms = time_ms([v[name] for v in sets])
                    except (RuntimeError, ValueError) as exc:      # a layout this torch refuses
                        line[name] = f"refused: {str(exc).splitlines()[0][:90]}"
                        continue
                    tf = 2.0 * m * n * k / ms / 1e9
                    bf16 = ms if name == "bf16" else bf16
                    line[name] = {"ms": ms, "tflops": tf,
                                  "speedup_vs_bf16": (bf16 / ms) if bf16 else None}
                results.append({"model": model, "phase": phase, "m": m, "n": n, "k": k, **line})
                cells = "; ".join(f"{k_}: {v['tflops']:.0f} TF/s ({v['speedup_vs_bf16']:.2f}x)"
                                  if isinstance(v, dict) else f"{k_}: {v}" for k_, v in line.items())
                print(f"{model} {phase} M {m} N {n} K {k}: {cells}", flush=True)
    if a.out:
        atomic_write_text(a.out, json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
