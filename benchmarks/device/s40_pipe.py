"""Session 40 probe: copy_rows with two column steps' loads in flight (KernelConfig.copy_pipe)
against one step at a time (session 39's), on one H200 (rank 0 of an emulated EP group).

1. Bits: the layer's output with copy_pipe on and off, same inputs, must be identical (a copy
   moves the same rows; the kernel is checked against float32 by tests/test_kernels_gpu.py),
   at shapes with a masked last column step (H not a multiple of 1024), several minibatches and
   ragged minibatch ends, pull and push dispatch, push and pull combine, BF16 and FP8 rings.
2. Time: the launch alone (benchmarks/copy_beside_gemm.py time_form: graph replay, fresh token
   values, median of 20), the pass and the copies form (skip_gemm), off and on, in
   alternating order over two rounds.

    PYTHONPATH=. python3 benchmarks/device/s40_pipe.py OUT.jsonl [SECONDS]

Ran at 760b523 (logs in mok_kernels/logs_s40/pipe/). The A/B flag (KernelConfig.copy_pipe) was
removed afterwards: the pipelined copy_rows is the only one, so this probe no longer runs as
written.

The probe itself is benchmarks/device/ab_flag.py (bits, then time; its logs name the flag-on
forms pipe, ab_flag.py now writes "_on").
"""
import sys

sys.path.insert(0, "benchmarks/device")
from ab_flag import COPY_BITS, D, main  # noqa: E402

TIMED = [  # (model, ep, tokens, seed, dispatch, combine, minibatch, comm_sms list)
    ("qwen3-30b-a3b", 8, 4096, 0, "pull", "pull", 4096, (8, 16, 32)),
    ("qwen3-30b-a3b", 8, 4096, 0, "pull", "push", 4096, (8, 16)),
    ("qwen3-30b-a3b", 8, 4096, 0, "push", "push", 4096, (8,)),
    (f"{D}/seed14/syn14-h3328-i1280-e256-k7-s1.toml", 16, 6144, 14, "pull", "pull", 4096, (8,)),
    ("kimi-k2", 16, 4096, 0, "pull", "push", 4096, (16,)),
]


if __name__ == "__main__":
    sys.exit(main("copy_pipe", COPY_BITS, TIMED))
