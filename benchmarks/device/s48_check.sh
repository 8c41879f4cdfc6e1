#!/bin/bash
# Session 48, call 1 (nvidia-h200, <= 560 s): the suites session 47 could not rerun. After the
# schedule builder took a SHIFT (rotated source order): forward (rank order), FP8, backward and
# autograd; after the push lanes' run search became one helper (sender_run): the local group
# (the path the CPU compile cannot check) and the rotated layer against the reference and bits.
export PYTHONPATH=.
R=$OUT/s48check; LIMIT=${LIMIT:-560}; source benchmarks/device/pytest_steps.sh
step group tests/test_kernels_gpu.py -k "local_group_matches_reference or local_group_production" &
step rot tests/test_kernels_gpu.py -k "rotated_sources" &
step k tests/test_kernels_gpu.py -k "not bench and not rotated and not fused_schedule and not local_group" &
step fp8 tests/test_fp8_gpu.py &
step bwd tests/test_backward_gpu.py &
step ag tests/test_autograd_gpu.py &
wait
cat $R/summary.log; grep -h "FAILED\|Error" $R/*.log | head -20
