#!/bin/bash
# Session 41, call 2 (nvidia-h200, <= 570 s): the forward GPU tests against float32 on the kernel
# whose emulated push lanes copy runs (the only path since c676f75), in five streams (compiles bound
# them): the whole of test_kernels_gpu, test_fp8_gpu, the random forward / FP8 / local-group draws,
# Gluon FP8, autograd, knobs and the NVLink bench.
R=$OUT/s41c; LIMIT=${LIMIT:-560}; source benchmarks/device/pytest_steps.sh
K=tests/test_kernels_gpu.py
step k1 $K -k "megakernel_matches_reference or small_ring or eight_virtual or bits_identical_over_runs or stalled or overflow or default_trap or every_model_preset or hidden_sizes or no_shared or push_lanes" &
step k2 $K -k "not (megakernel_matches_reference or small_ring or eight_virtual or bits_identical_over_runs or stalled or overflow or default_trap or every_model_preset or hidden_sizes or no_shared or push_lanes)" &
step fp8 tests/test_fp8_gpu.py &
step rnd tests/test_random_shapes_gpu.py -k "forward or local_group or fp8" &
step rest tests/test_gluon_fp8_gpu.py tests/test_autograd_gpu.py tests/test_knobs_gpu.py tests/test_nvlink_bench.py &
wait
cat $R/summary.log; grep -h "FAILED\|Error" $R/*.log | head -20
