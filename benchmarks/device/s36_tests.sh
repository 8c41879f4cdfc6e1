#!/bin/bash
# Session 36 (nvidia-h200, <= 560 s): the GPU tests session 35's call limit cut, on the forward
# kernel with compile-time mode words (e060615), most exposed first: group mode (its own join and
# remote rings), the FP8 forward (the same kernel with FP8 tiles), autograd (forward + saved
# gate/up), the knobs tests, then the rest of the random forward draws and the backward draws.
# Logs: $OUT/s36t/*.log
R=$OUT/s36t; LIMIT=560; source benchmarks/device/pytest_steps.sh
step group tests/test_random_shapes_gpu.py -k local_group
step fp8 tests/test_fp8_gpu.py
step autograd tests/test_autograd_gpu.py
step knobs tests/test_knobs_gpu.py
step random_fwd tests/test_random_shapes_gpu.py -k "random_shape_forward or random_shape_fp8"
step random_bwd tests/test_random_shapes_gpu.py -k random_shape_backward
cat $R/summary.log
grep -h "FAILED\|Error" $R/*.log | head -20
