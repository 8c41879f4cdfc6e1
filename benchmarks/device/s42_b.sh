#!/bin/bash
# Session 42, call 2 (nvidia-h200, <= 570 s): dn_blocks across eleven preset workloads
# (benchmarks/device/s42_blocks.py SWEEP): compiles in parallel, then the timing alone on the
# GPU; every output in one archive (a call brings back at most 8 files).
R=$OUT/s42b; LIMIT=${LIMIT:-560}; source benchmarks/device/pytest_steps.sh
P=benchmarks/device/s42_blocks.py
python3 $P jobs sweep | xargs -P 14 -L 1 sh -c 'timeout 300 python3 '$P' "$@" >> '$R'/warm.log 2>&1' _
echo "warm done at $(( $(date +%s) - T0 )) s: $(grep -c ok $R/warm.log) ok" >> $R/summary.log
left=$(( LIMIT - ($(date +%s) - T0) - 15 ))
timeout $left python3 $P time $R/time.jsonl $(( left - 20 )) sweep > $R/time.log 2>&1
echo "time: exit $? at $(( $(date +%s) - T0 )) s" >> $R/summary.log
tar -czf $OUT/s42b.tgz -C $OUT s42b
cat $R/summary.log; grep -h "Error" $R/*.log | head; cat $R/time.log | tail -20
