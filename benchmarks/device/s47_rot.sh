#!/bin/bash
# Session 47, call 1 (nvidia-h200, <= 560 s): KernelConfig.source_order='rotated' (each rank's
# sources of an expert start after it; docs/sim-study.md "N"): the schedule builder's Triton path
# against the tensor ops, rotated and not (eager and graph); the rotated layer against the float32
# reference and the bits of rank order (virtual ranks, emulated rank, local group); and the rank
# order's own tests of the push lanes, the reference and the local group, unchanged.
export PYTHONPATH=.
R=$OUT/s47rot; LIMIT=${LIMIT:-540}; source benchmarks/device/pytest_steps.sh
step sched tests/test_kernels_gpu.py -k "fused_schedule" &
step rot tests/test_kernels_gpu.py -k "rotated_sources" &
step lanes tests/test_kernels_gpu.py -k "push_lanes or megakernel_matches_reference" &
step group tests/test_kernels_gpu.py -k "local_group_matches_reference or local_group_production" &
wait
cat $R/summary.log; grep -h "FAILED\|Error\|assert" $R/*.log | head -30
