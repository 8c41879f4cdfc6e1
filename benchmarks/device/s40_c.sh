#!/bin/bash
# Session 40, call 3 (nvidia-h200, <= 570 s): the kernel with pipelined row copies (copy_rows,
# A/B flag removed). First seed 14's drawn shapes timed alone (registered before the run:
# calibration/predictions/h200_drawn14_pipe_2026-12-04.jsonl), then the forward GPU tests against
# float32 on this kernel in four streams (compiles bound them).
bash benchmarks/device/drawn_seed.sh 14 s40c14
R=$OUT/s40c
LIMIT=330; source benchmarks/device/pytest_steps.sh
K=tests/test_kernels_gpu.py
step k1 $K -k "megakernel_matches_reference or small_ring or eight_virtual or bits_identical_over_runs or stalled or overflow or default_trap" &
step k2 $K -k "every_model_preset or hidden_sizes or no_shared or local_group_production or local_group_matches or local_group_ring" &
step fp8 tests/test_fp8_gpu.py -k "fp8_matches_references or every_mode_at_kimi or small_ring or ring_holds or fp8_bits_identical" &
step rnd tests/test_random_shapes_gpu.py -k "forward or local_group or test_random_shape_fp8" &
wait
cat $R/summary.log; grep -h "FAILED\|Error" $R/*.log | head -20
