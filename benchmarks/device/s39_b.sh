#!/bin/bash
# Session 39, call 3 (nvidia-h200, <= 560 s): copy_steps (every comm copy with its index loads
# ahead) on all copy paths, now the default: bits against the serial loop (push dispatch, FP8,
# pull combine), then the GPU tests that run every copy path against float32.
R=$OUT/s39b; LIMIT=550; source benchmarks/device/pytest_steps.sh
timeout 200 python3 benchmarks/device/s39_ahead.py $R/ahead_b.jsonl 60 > $R/ahead_b.log 2>&1
echo "ahead_b: exit $? at $(( $(date +%s) - T0 )) s" >> $R/summary.log
step k1 tests/test_kernels_gpu.py -x -k "megakernel_matches_reference or local_group_matches or local_group_production or eight_virtual or small_ring or hidden_sizes or bits_identical_over_runs"
step f1 tests/test_fp8_gpu.py -x -k "every_mode_at_kimi or small_ring or ring_holds or bits_identical"
step r1 tests/test_random_shapes_gpu.py -x -k "forward or local_group or test_random_shape_fp8"
cat $R/summary.log; grep -h "FAILED\|Error" $R/*.log | head -20; tail -15 $R/ahead_b.log
