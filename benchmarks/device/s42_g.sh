#!/bin/bash
# Session 42, call 8 (nvidia-h200, <= 200 s): the GPU tests whose bit comparison now goes through
# one helper (tests/test_kernels_gpu.py output_and_served_slots): tma_a, split_dn, the
# flattened down blocks and the default's, in four streams.
R=$OUT/s42g; LIMIT=${LIMIT:-190}; source benchmarks/device/pytest_steps.sh
K=tests/test_kernels_gpu.py
step tma $K -k "tma_activation" &
step split $K -k "split_down_matches" &
step blocks $K -k "flattened_blocks" &
step default $K -k "default_down_blocks" &
wait
tar -czf $OUT/s42g.tgz -C $OUT s42g
cat $R/summary.log; grep -h "FAILED\|Error" $R/*.log | head -20
