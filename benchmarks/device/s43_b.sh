#!/bin/bash
# Session 43, call 2 (nvidia-h200, <= 560 s): the backward w_blocks bits test at two pipeline
# stages (call 1: three ask 272 KiB of shared memory) while the decode dn_blocks cases compile;
# then the timings one after another: decode dn_blocks (s43_decode.sh), w_blocks (s43_wblocks.sh),
# the training A-item epilogue chunk (s41_bwd_epi.sh).
R=$OUT/s43b; LIMIT=${LIMIT:-560}; source benchmarks/device/pytest_steps.sh
P=benchmarks/device/s42_blocks.py
step wb tests/test_backward_gpu.py -k "w_blocks" &
python3 $P jobs decode | xargs -P 8 -L 1 sh -c 'timeout 200 python3 '$P' "$@" >> '$R'/warm.log 2>&1' _
wait
echo "tests and warm-up done at $(( $(date +%s) - T0 )) s" >> $R/summary.log
timeout 120 python3 $P time $R/decode.jsonl 100 decode > $R/decode.log 2>&1
echo "decode time: exit $? at $(( $(date +%s) - T0 )) s" >> $R/summary.log
SKIP_WB_TEST=1 LIMIT=200 bash benchmarks/device/s43_wblocks.sh > $R/wblocks.log 2>&1
echo "wblocks: exit $? at $(( $(date +%s) - T0 )) s" >> $R/summary.log
left=$(( LIMIT - ($(date +%s) - T0) - 10 ))
[ $left -gt 60 ] && timeout $left bash benchmarks/device/s41_bwd_epi.sh > $R/epi.log 2>&1
echo "a_epi: exit $? at $(( $(date +%s) - T0 )) s" >> $R/summary.log
rm -rf $OUT/s43w $OUT/s41e
tar -czf $OUT/s43b.tgz -C $OUT s43b
cat $R/summary.log; grep -h "FAILED\|Error" $R/*.log | head -20; tail -n 12 $R/decode.log
grep -h "x GEMMs" $R/wblocks.log $R/epi.log
