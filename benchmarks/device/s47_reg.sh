#!/bin/bash
# Session 47, call 3 (nvidia-h200, <= 400 s): after the schedule builder took a SHIFT (the rotated
# source order), the forward, FP8, backward and autograd GPU suites on rank order, in parallel.
export PYTHONPATH=.
R=$OUT/s47reg; LIMIT=${LIMIT:-360}; source benchmarks/device/pytest_steps.sh
step k tests/test_kernels_gpu.py -k "not bench and not rotated and not fused_schedule" &
step fp8 tests/test_fp8_gpu.py &
step bwd tests/test_backward_gpu.py &
step ag tests/test_autograd_gpu.py &
wait
cat $R/summary.log; grep -h "FAILED\|Error" $R/*.log | head -20
