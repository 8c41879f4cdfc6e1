"""Prepared in session 40 (not yet run): the emulated push lanes copying their source's run of
each tile (KernelConfig.lane_runs) against scanning every chunk of the minibatch, on one H200:
bits on the copy-loop cases (push / pull dispatch, both combines, BF16 and FP8 rings), then the
pass and the copies alone, off and on (benchmarks/device/ab_flag.py).

    PYTHONPATH=. python3 benchmarks/device/s41_lanes.py OUT.jsonl [SECONDS]

Compiled for sm_90 on the CPU box with the flag on (`benchmarks/cpu/compile_megakernel.py --set
lane_runs=1`), and the default path's code unchanged with it off (same PTX digests); the run
invariant it relies on is tests/test_kernels_cpu.py::test_a_tiles_rows_of_one_source_are_one_run.
"""
import sys

sys.path.insert(0, "benchmarks/device")
from ab_flag import COPY_BITS, D, main  # noqa: E402

TIMED = [  # (model, ep, tokens, seed, dispatch, combine, minibatch, comm_sms list)
    ("qwen3-30b-a3b", 8, 4096, 0, "push", "push", 4096, (8, 16)),
    ("qwen3-30b-a3b", 8, 4096, 0, "push", "pull", 4096, (16,)),
    (f"{D}/seed14/syn14-h3328-i1280-e256-k7-s1.toml", 16, 6144, 14, "push", "push", 4096, (12,)),
    ("kimi-k2", 16, 4096, 0, "push", "push", 4096, (16,)),
]

if __name__ == "__main__":
    sys.exit(main("lane_runs", COPY_BITS, TIMED))
