#!/bin/bash
# Session 38 (nvidia-h200, <= 560 s): GPU tests after this session's changes: the nvlink_bench
# copy loop folded into one helper (tests/test_nvlink_bench.py), the FP8 forward (its gate/up
# branch now follows the skip_gemm one: tests/test_fp8_gpu.py), and the rest of
# tests/test_kernels_gpu.py (call 1 ran its skip_gemm and matches_reference tests).
R=$OUT/s38t; LIMIT=560; source benchmarks/device/pytest_steps.sh
step nvlink_bench tests/test_nvlink_bench.py
step fp8 tests/test_fp8_gpu.py
step kernels_rest tests/test_kernels_gpu.py -k "not skip_gemm and not matches_reference"
cat $R/summary.log
grep -h "FAILED\|Error" $R/*.log | head -20
