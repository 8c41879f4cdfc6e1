#!/bin/bash
# Session 42, call 6 (nvidia-h200, <= 300 s): dn_blocks under each combine mode
# (benchmarks/device/s42_blocks.py MODES): seed 17's registration read pull combine 15-36% slow
# on the one drawn shape whose rule gives 2 blocks. Compiles in parallel, then the timing alone.
R=$OUT/s42e; LIMIT=${LIMIT:-290}; source benchmarks/device/pytest_steps.sh
P=benchmarks/device/s42_blocks.py
python3 $P jobs modes | xargs -P 12 -L 1 sh -c 'timeout 200 python3 '$P' "$@" >> '$R'/warm.log 2>&1' _
echo "warm done at $(( $(date +%s) - T0 )) s" >> $R/summary.log
left=$(( LIMIT - ($(date +%s) - T0) - 10 ))
timeout $left python3 $P time $R/time.jsonl $(( left - 15 )) modes > $R/time.log 2>&1
echo "time: exit $? at $(( $(date +%s) - T0 )) s" >> $R/summary.log
tar -czf $OUT/s42e.tgz -C $OUT s42e
cat $R/summary.log; grep -h "Error" $R/*.log | head; tail -n 8 $R/time.log
