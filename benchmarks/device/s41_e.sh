#!/bin/bash
# Session 41, last call (nvidia-h200, <= 210 s): the senders' push dispatch (PUSH_DISPATCH 2:
# every rank in one launch, and group mode on LocalGroup, the cross-GPU protocol) copying its
# run of each of the receiver's tiles instead of scanning every chunk; against float32 and its
# own bits over passes, in four streams (compiles bound them).
R=$OUT/s41e; LIMIT=${LIMIT:-210}; source benchmarks/device/pytest_steps.sh
K=tests/test_kernels_gpu.py
step group $K -k "local_group and not missing_rank and not overflow" &
step virtual $K -k "megakernel_matches_reference or eight_virtual or small_ring" &
step random tests/test_random_shapes_gpu.py -k "local_group" &
step fp8 tests/test_fp8_gpu.py -k "None" &
wait
cat $R/summary.log; grep -h "FAILED\|Error" $R/*.log | head -20
