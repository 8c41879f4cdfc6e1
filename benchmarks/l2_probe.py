"""L2 -> SM read bandwidth probe: every program of a full grid reads a buffer small enough to stay
in L2 (default 24 MB of the H200's 50-60 MB) again and again; bytes read / time. The backward's
per-item model (benchmarks/bwd_item_model.py) assumes about 7 TB/s; this measures it. Prints
one line per buffer size.

    PYTHONPATH=. python benchmarks/l2_probe.py
"""

from __future__ import annotations

import functools
import sys

import torch

from mok_kernels import require_cuda, require_triton
from mok_model.cli import distinct, doc_parser, int_at_least, number_list, run_tool

MAX_MB = 100_000   # a buffer larger than any GPU's memory (100 GB) is refused before the GPU


@functools.lru_cache(maxsize=1)
def _read_loop():
    """The probe kernel (Triton is imported here: the script refuses cleanly without it)."""
    import triton
    import triton.language as tl

    @triton.jit
    def read_loop(src_ptr, out_ptr, n_elems, reps, BLOCK: tl.constexpr):
        """Each program sums blocks pid, pid + grid, ... of the buffer, ``reps`` times over."""
        pid = tl.program_id(0)
        nprog = tl.num_programs(0)
        offs = tl.arange(0, BLOCK)
        acc = tl.zeros((BLOCK,), dtype=tl.float32)
        for _ in range(0, reps):
            for b in range(pid * BLOCK, n_elems, nprog * BLOCK):
                acc += tl.load(src_ptr + b + offs, mask=b + offs < n_elems, other=0.0)
        tl.store(out_ptr + pid * BLOCK + offs, acc)
    return read_loop


def probe(mbytes: float, reps: int, progs_per_sm: int = 4, block: int = 4096) -> float:
    """TB/s of L2 reads with a buffer of ``mbytes`` MB read ``reps`` times."""
    n = int(mbytes * 1e6) // 4
    src = torch.randn(n, device="cuda")
    grid = torch.cuda.get_device_properties(0).multi_processor_count * progs_per_sm
    out = torch.empty(grid * block, device="cuda")
    _read_loop()[(grid,)](src, out, n, 1, BLOCK=block)          # compile, warm L2
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    _read_loop()[(grid,)](src, out, n, reps, BLOCK=block)
    e.record()
    torch.cuda.synchronize()
    return n * 4 * reps / (s.elapsed_time(e) * 1e-3) / 1e12


def main(argv: list[str] | None = None) -> int:
    p = doc_parser("benchmarks/l2_probe.py", __doc__)
    p.add_argument("--mb", default="8,24,40,200", help="buffer sizes, MB (200: HBM for contrast)")
    p.add_argument("--reps", type=int_at_least(1, 1_000_000), default=50)
    return run_tool(p, run, argv)


def run(a) -> None:
    """One line per buffer size (flags checked first; a CUDA GPU and Triton)."""
    sizes = number_list(a.mb, "--mb", float, 0, MAX_MB, open_low=True)
    distinct("--mb", a.mb)
    require_cuda()
    require_triton()
    for mb in sizes:
        print(f"buffer {mb:6.0f} MB: {probe(mb, a.reps):6.2f} TB/s read", flush=True)


if __name__ == "__main__":
    sys.exit(main())
