#!/bin/bash
# Session 43, call 1 (nvidia-h200, <= 560 s): the random forward shapes (their draws now include
# dn_blocks, drawn last) beside the backward w_blocks bits / float32 test, then the w_blocks
# timing of s43_wblocks.sh (its own test step skipped).
R=$OUT/s43a; LIMIT=${LIMIT:-560}; source benchmarks/device/pytest_steps.sh
step rnd tests/test_random_shapes_gpu.py -k forward &
step wb tests/test_backward_gpu.py -k "w_blocks" &
wait
tar -czf $OUT/s43a.tgz -C $OUT s43a
cat $R/summary.log; grep -h "FAILED\|Error" $R/*.log | head -20
left=$(( LIMIT - ($(date +%s) - T0) - 5 ))
SKIP_WB_TEST=1 LIMIT=$left bash benchmarks/device/s43_wblocks.sh
