"""Session 39 probe: the pull copies with their index loads ahead (KernelConfig.copy_ahead) against
today's loop, on one H200 (rank 0 of an emulated EP group).

1. Bits: the layer's output with copy_ahead on and off, same inputs, must be identical (a copy
   moves the same rows; today's loop is checked against float32 by tests/test_kernels_gpu.py),
   at shapes with a masked last row chunk (H not a multiple of 1024), several minibatches and
   ragged minibatch ends, pull dispatch with push and pull combine.
2. Time: the launch alone (benchmarks/copy_beside_gemm.py time_form: graph replay, fresh token
   values, median of --iters), the pass and the copies form (skip_gemm), off and on, in
   alternating order over two rounds.

    PYTHONPATH=. python3 benchmarks/device/s39_ahead.py OUT.jsonl [SECONDS]

Ran at c9d02b3 (pull copies only) and da19be3 (every copy path; logs in
mok_kernels/logs_s39/). The A/B flag (KernelConfig.copy_ahead) was removed afterwards: the
ahead loop (megakernel.py gather_chunks) is the only one, so this probe no longer runs as written.

The probe itself is benchmarks/device/ab_flag.py (bits, then time; its logs name the flag-on
forms ahead, ab_flag.py now writes "_on").
"""
import sys

sys.path.insert(0, "benchmarks/device")
from ab_flag import COPY_BITS, D, main  # noqa: E402

TIMED = [  # (model, ep, tokens, seed, dispatch, combine, minibatch, comm_sms list)
    ("qwen3-30b-a3b", 8, 4096, 0, "push", "push", 4096, (8, 16)),
    (f"{D}/seed14/syn14-h3328-i1280-e256-k7-s1.toml", 16, 6144, 14, "push", "pull", 4096, (8,)),
]


if __name__ == "__main__":
    sys.exit(main("copy_ahead", COPY_BITS, TIMED))
