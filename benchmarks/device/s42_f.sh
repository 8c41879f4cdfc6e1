#!/bin/bash
# Session 42, call 7 (nvidia-h200, <= 300 s): the pull combine's release once per down item,
# after its flattened loop (call 6: a barrier and release per block inside the loop ran the pass
# 1.4-1.5x slower with dn_blocks > 1). The float32 / bits test's pull-combine cases and the
# default's, with the compiles in parallel; then the combine modes timed again (MODES).
R=$OUT/s42f; LIMIT=${LIMIT:-290}; source benchmarks/device/pytest_steps.sh
P=benchmarks/device/s42_blocks.py
K=tests/test_kernels_gpu.py
step blocks $K -k "blocks1 or blocks3 or blocks5 or default_down_blocks" &
python3 $P jobs modes | xargs -P 12 -L 1 sh -c 'timeout 200 python3 '$P' "$@" >> '$R'/warm.log 2>&1' _
wait
echo "tests and warm-up done at $(( $(date +%s) - T0 )) s" >> $R/summary.log
left=$(( LIMIT - ($(date +%s) - T0) - 10 ))
timeout $left python3 $P time $R/time.jsonl $(( left - 15 )) modes > $R/time.log 2>&1
echo "time: exit $? at $(( $(date +%s) - T0 )) s" >> $R/summary.log
tar -czf $OUT/s42f.tgz -C $OUT s42f
cat $R/summary.log; grep -h "FAILED\|Error" $R/*.log | head; tail -n 8 $R/time.log
