"""A BF16 grouped GEMM over a rank's ragged experts in Gluon (Triton's explicit sm_90 frontend),
against torch._grouped_mm on the same rows: can a warp-specialized core close the gap between
the Triton megakernel's own GEMM phases and the library (issue 13's kernel goal)?

At narrow experts the megakernel's GEMM phases alone run 1.07-1.23x the library's grouped GEMMs
(mok_kernels/NOTES.md, "Where a narrow forward's time goes"): Triton's sm_90 loop has no warp
specialization. The FP8 Gluon core (mok_kernels/gluon_fp8/core.py: a one-warp TMA load
partition feeding two math warpgroups through an mbarrier ring) reached the library's FP8 rate;
this is the same arrangement in BF16, where no per-block scale step sits between MMAs, so each
math warpgroup keeps one MMA in flight on its own accumulator:
- work list: tiles of at most 128 rows of one expert (grouped_tiles) x TN-column blocks, walked by
  one persistent program an SM in a static order (GROUP_M row tiles at a time);
- load warp: A's 128 rows (a tile's rows past its end, the next expert's or zeros past A's end,
  are loaded and never stored) and B^T's TN rows from row expert x N (an (E x N, K) view; columns
  past N are another expert's or zeros and never stored), 64-column K blocks (128 bytes, the
  TMA swizzle's width) into a STAGES-deep ring;
- math warpgroups: 64 rows each of the tile, ``acc += A_k B_k`` as async wgmma, one in flight
  (block k's issued before block k-1's is waited for and its buffer released); the sum goes
  through shared memory to a store masked by row and column.
Any N and K (K a multiple of 8: 16-byte TMA strides); any row counts, 0 too.

    PYTHONPATH=. python3 benchmarks/gluon_bf16_grouped.py [--cases qwen3-30b-gate-up,...]
        [--forms tn128-s4,tn256-s3] [--out FILE.json]
    PYTHONPATH=.:TRITON_SITE .venv/bin/python benchmarks/gluon_bf16_grouped.py --compile-only

On a GPU, each case and form: C pre-filled with NaN; every row written, none past the end, each
expert within 1e-2 relative error of its float32 product (BF16 output rounding is ~2e-3); then
TF/s of each form and of torch._grouped_mm (B (E, K, N), as mok_kernels/bench.py's gemm-only
baseline has it) over two input sets, CUDA events, 10 warm-ups, median of 30; ratios to torch in
the same run. Exit status 1 if a check failed.
"""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.gluon_fp8_gemm import (coverage_failures, grouped_counts,  # noqa: E402
                                      grouped_tiles, subset_failures)
from mok_kernels.gluon_fp8.core import WS_MAXNREG, _compile_sm90, _desc, gluon  # noqa: E402
from mok_model.cli import distinct, doc_parser, run_tool  # noqa: E402
from mok_model.errors import MokInputError  # noqa: E402

TM, TK = 128, 64          # tile rows (two math warpgroups of 64), K block (128 bytes of BF16)
# form: (TN, STAGES). Shared memory: STAGES x (16 KB A + TN x 128 B of B) + 2 x 64 x TN x 2 B C
# tn128-s6: 6 x 32 KB + 32 KB = 224 KB; tn256-s3: 3 x 48 KB + 64 KB = 208 KB (<= 227 KB)
FORMS = {"tn128-s4": (128, 4), "tn128-s6": (128, 6), "tn256-s3": (256, 3)}
# a rank's expert GEMMs at EP 8, 4,096 tokens a rank (name: (N, K, local experts, rows)):
# rows = 4,096 x 8 ranks x top-k / 8, spread by a seeded multinomial (grouped_counts "uniform")
CASES = {"qwen3-30b-gate-up": (1536, 2048, 16, 32768),
         "qwen3-30b-down": (2048, 768, 16, 32768),
         "qwen3-next-gate-up": (1024, 2048, 64, 40960),
         "qwen3-next-down": (2048, 512, 64, 40960),
         "kimi-k2-gate-up": (4096, 7168, 48, 32768),
         "kimi-k2-down": (7168, 2048, 48, 32768),
         "glm-5-gate-up": (4096, 6144, 32, 32768),
         "glm-5-down": (6144, 2048, 32, 32768)}
SETS = 2

if gluon is not None:
    from triton.experimental.gluon import language as gl

    from benchmarks.gluon_fp8_gemm import _loader_grouped
    from mok_kernels.gluon_fp8.core import (GROUP_M, _acc_layout, _bf16_tile, _out_layouts,
                                            _release_blocks, _ring, _tile)

    @gluon.jit
    def _bf16_math_grouped(c_ptr, a_s, b_s, ready, empty, t_expert, t_row0, t_rows, n_tiles, N,
                           K, ROW0: gl.constexpr, STAGES: gl.constexpr):
        """A math warpgroup: rows ROW0 ... ROW0 + 64 of each item's tile, stored masked to the
        tile's rows and to N; a half with no row of the tile only releases its blocks."""
        TMH: gl.constexpr = a_s.shape[1] // 2
        TN: gl.constexpr = b_s.shape[1]
        BKK: gl.constexpr = a_s.shape[2]
        mma: gl.constexpr = _acc_layout(gl.num_warps(), TN, 16)
        layouts: gl.constexpr = _out_layouts(gl.num_warps(), TMH, TN)
        out: gl.constexpr = layouts[1]
        c_s = gl.allocate_shared_memory(gl.bfloat16, [TMH, TN], layouts[0])
        nk = gl.cdiv(K, BKK)
        n_blocks = gl.cdiv(N, TN)
        it = 0
        for item in range(gl.program_id(0), n_tiles * n_blocks, gl.num_programs(0)):
            tile, pid_n = _tile(item, n_tiles * 2 * TMH, N, 2 * TMH, TN, GROUP_M)
            row0 = gl.load(t_row0 + tile)
            end = row0 + gl.load(t_rows + tile)
            off_m = row0 + ROW0
            if off_m < end:
                acc = _bf16_tile(a_s, b_s, ready, empty, it, nk, ROW0, TMH, TN, mma, STAGES)
                c_s.store(acc.to(gl.bfloat16))
                rows = off_m + gl.arange(0, TMH, layout=gl.SliceLayout(1, out))
                cols = pid_n * TN + gl.arange(0, TN, layout=gl.SliceLayout(0, out))
                gl.store(c_ptr + rows.to(gl.int64)[:, None] * N + cols[None, :], c_s.load(out),
                         mask=(rows < end)[:, None] & (cols < N)[None, :])
            else:
                _release_blocks(ready, empty, it, nk, STAGES)
            it += nk

    @gluon.jit
    def bf16_grouped_ws_kernel(a_desc, b_desc, c_ptr, t_expert, t_row0, t_rows, n_tiles, N, K,
                               STAGES: gl.constexpr, num_warps: gl.constexpr):
        """The grouped BF16 GEMM: two math warpgroups and a one-warp TMA loader (gl.warp_specialize)
        in each persistent program, over the work list's (tile, column block) items."""
        TMH: gl.constexpr = a_desc.block_type.shape[0] // 2
        a_s, b_s, ready, empty = _ring(a_desc, b_desc, STAGES, 2)
        gl.warp_specialize([
            (_bf16_math_grouped, (c_ptr, a_s, b_s, ready, empty, t_expert, t_row0, t_rows,
                                  n_tiles, N, K, 0, STAGES)),
            (_bf16_math_grouped, (c_ptr, a_s, b_s, ready, empty, t_expert, t_row0, t_rows,
                                  n_tiles, N, K, TMH, STAGES)),
            (_loader_grouped, (a_desc, b_desc, a_s, b_s, ready, empty, t_expert, t_row0, n_tiles,
                               N, K, STAGES)),
        ], [4, 1], [240, 24])     # 3 x 168 - 240 - 24 = 240 for the default partition


def _launch_args(a, bt, c, tiles, form: str) -> tuple:
    """(kernel, positional arguments, launch options, items) on A (R, K) bf16, B^T (E, N, K)
    bf16, C (>= R, N) bf16 and the work list `tiles` (grouped_tiles)."""
    if gluon is None:
        raise MokInputError("needs Triton with Gluon (triton.experimental.gluon)")
    import torch

    tn, stages = FORMS[form]
    (e, n, k), rows = bt.shape, a.shape[0]
    if (k % 8 or c.shape[1] != n or c.shape[0] < rows or a.shape[1] != k
            or any(t.dtype != torch.bfloat16 or not t.is_contiguous() for t in (a, bt, c))):
        raise MokInputError("grouped BF16 GEMM: A (R, K), B^T (E, N, K), C (>= R, N), bf16, "
                            "contiguous, K a multiple of 8, are required")
    expert, row0, nrows = tiles
    descs = (_desc(a, [TM, TK], gl.bfloat16), _desc(bt.view(e * n, k), [tn, TK], gl.bfloat16))
    return (bf16_grouped_ws_kernel, (*descs, c, expert, row0, nrows, len(expert), n, k, stages),
            {"num_warps": 4, "maxnreg": WS_MAXNREG}, len(expert) * -(-n // tn))


def bf16_grouped_gemm(a, bt, counts, form: str, c=None, tiles=None):
    """(launch, C): C[r] = A[r] @ B^T[e].T (bf16) for each expert e's rows (counts[e] each, one
    expert's after the other), descriptors and work list built once; `tiles` replaces
    grouped_tiles(counts) (a subset leaves the other rows alone)."""
    import torch

    if c is None:
        c = torch.empty(a.shape[0], bt.shape[1], device=a.device, dtype=torch.bfloat16)
    tiles = grouped_tiles(counts.to(a.device), TM) if tiles is None else tiles
    kernel, args, options, items = _launch_args(a, bt, c, tiles, form)
    grid = min(items, torch.cuda.get_device_properties(a.device).multi_processor_count)

    def launch():
        if items:
            kernel[(grid, )](*args, **options)
    return launch, c


def _check(name: str, form: str, x, bt, counts) -> tuple:
    """(worst expert's relative error, failures): every row written and within 1e-2 of its
    expert's float32 product, none past the end written; the odd experts' tiles alone write
    their rows bitwise as before and nothing else."""
    import torch

    rows, n = x.shape[0], bt.shape[1]
    c = torch.full((rows + TM, n), float("nan"), device=x.device, dtype=torch.bfloat16)
    bf16_grouped_gemm(x, bt, counts, form, c=c)[0]()
    torch.cuda.synchronize()
    fails = coverage_failures(c, rows)
    err, end = 0.0, 0
    for e, m in enumerate(counts.tolist()):
        if m:
            want = x[end:end + m].float() @ bt[e].float().t()
            e_err = float((c[end:end + m].float() - want).norm() / want.norm())
            if not e_err <= 1e-2:
                fails.append(f"expert {e} ({m} rows): rel. error {e_err:.2e}")
            err = max(err, e_err) if e_err == e_err else float("nan")
        end += m
    tiles = grouped_tiles(counts.to(x.device), TM)
    keep = tiles[0] % 2 == 1
    part = torch.full_like(c, float("nan"))
    bf16_grouped_gemm(x, bt, counts, form, c=part,
                      tiles=tuple(t[keep].contiguous() for t in tiles))[0]()
    torch.cuda.synchronize()
    owner = torch.repeat_interleave(torch.arange(len(counts), device=x.device),
                                    counts.to(x.device))
    fails += subset_failures(part, c, owner % 2 == 1, rows, "odd")
    for f in fails:
        print(f"{name} {form}: CHECK FAILED: {f}", flush=True)
    return err, fails


def measure(cases: tuple, forms: tuple) -> tuple:
    """Check, then time, each form on each case beside torch._grouped_mm: (figures, failures)."""
    import torch

    from benchmarks.fp8_ceiling import time_ms
    from mok_kernels.baselines import grouped_mm

    out, failed = {}, 0
    for name in cases:
        n, k, experts, rows = CASES[name]
        counts = grouped_counts(experts, "uniform", rows)
        offs = torch.cumsum(counts, 0).to(torch.int32).cuda()
        sets = []
        for s in range(SETS):
            g = torch.Generator(device="cuda").manual_seed(s)
            x = torch.randn(rows, k, device="cuda", generator=g).bfloat16()
            w = (torch.randn(experts, k, n, device="cuda", generator=g) / k ** 0.5).bfloat16()
            sets.append((x, w, w.transpose(1, 2).contiguous()))
        flops = 2.0 * rows * n * k
        row = {"N": n, "K": k, "experts": experts, "rows": rows,
               "torch_grouped_mm": flops / time_ms([lambda st=st, o=offs: grouped_mm(st[0], st[1], o)
                                                    for st in sets]) / 1e9}
        parts = [f"torch {row['torch_grouped_mm']:.0f} TF/s"]
        for form in forms:
            err, fails = _check(name, form, sets[0][0], sets[0][2], counts)
            if fails:
                failed += 1
                row[form] = {"failed": fails}
                parts.append(f"{form} FAILED")
                continue
            tf = flops / time_ms([bf16_grouped_gemm(st[0], st[2], counts, form)[0]
                                  for st in sets]) / 1e9
            row[form] = {"tflops": tf, "vs_torch": tf / row["torch_grouped_mm"], "rel_err": err}
            parts.append(f"{form} {tf:.0f} TF/s ({tf / row['torch_grouped_mm']:.2f}x, err "
                         f"{err:.1e})")
        print(f"{name} (N {n}, K {k}, {experts} experts, {rows} rows): " + ", ".join(parts),
              flush=True)
        out[name] = row
        del sets
        torch.cuda.empty_cache()
    return out, failed


def _names(text: str, known: dict, flag: str) -> tuple:
    """A comma list of `known` names ("all": every one); refuse others in one line."""
    names = tuple(known) if text == "all" else tuple(distinct(flag, text))
    for name in names:
        if name not in known:
            raise MokInputError(f"{flag} {text!r}: {name!r} is not one of {', '.join(known)} "
                                "(or all)")
    return names


def main(argv=None) -> int:
    p = doc_parser("benchmarks/gluon_bf16_grouped.py", __doc__)
    p.add_argument("--cases", default="all", help=f"comma list of {', '.join(CASES)} (or all)")
    p.add_argument("--forms", default="all", help=f"comma list of {', '.join(FORMS)} (or all)")
    p.add_argument("--out", default=None, help="write the figures as JSON here")
    p.add_argument("--compile-only", action="store_true",
                   help="compile each form for sm_90 without a GPU and print its resources")
    return run_tool(p, run, argv)


def run(a) -> int:
    cases = _names(a.cases, CASES, "--cases")
    forms = _names(a.forms, FORMS, "--forms")
    if a.out is not None:
        from mok_model.fileio import check_output_file
        check_output_file(a.out, "--out")
    if a.compile_only:
        import tempfile

        import torch

        from mok_kernels.aot import stats
        counts = torch.full((16, ), 2048, dtype=torch.int64)
        x = torch.empty(32768, 2048, dtype=torch.bfloat16)
        bt = torch.empty(16, 1536, 2048, dtype=torch.bfloat16)
        c = torch.empty(32768, 1536, dtype=torch.bfloat16)
        for form in forms:
            kernel = _compile_sm90(*_launch_args(x, bt, c, grouped_tiles(counts, TM), form)[:3])
            st = stats(kernel, tempfile.mkdtemp(), "bf16_grouped")
            print(f"{form}: {st['regs']} registers, spills {st['spill_st']} / {st['spill_ld']} "
                  f"bytes, {st['shared']} bytes of shared memory, MMA waits "
                  f"{st['ttgir_dot_wait_pendings']}, ptxas notes "
                  f"{[c for c, _ in st['ptxas_notes']]}")
        return 0
    from mok_kernels import require_cuda
    require_cuda()
    figures, failed = measure(cases, forms)
    if a.out is not None:
        Path(a.out).write_text(json.dumps(figures, indent=1) + "\n")
    if failed:
        print(f"grouped BF16 GEMM: {failed} check(s) FAILED", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
