#!/bin/bash
# Prepared in session 42 (nvidia-h200, <= 300 s), not yet run: dn_blocks at decode sizes
# (benchmarks/device/s42_blocks.py DECODE): the rule keeps one block where a rank has fewer
# expected down items than SMs, but qwen3-30b-a3b EP 32 256 read 0.93x at 2 blocks in session 42
# (one sample), and qwen3-next EP 16 1,024 zipf 1.02x at its rule's 4 (timed here with uniform
# routing, as every case of the probe). Compiles in parallel,
# then the timing alone; change tiles.forward_dn_blocks only if a rule holds on all of them.
R=$OUT/s43d; LIMIT=${LIMIT:-290}; source benchmarks/device/pytest_steps.sh
P=benchmarks/device/s42_blocks.py
python3 $P jobs decode | xargs -P 12 -L 1 sh -c 'timeout 200 python3 '$P' "$@" >> '$R'/warm.log 2>&1' _
echo "warm done at $(( $(date +%s) - T0 )) s" >> $R/summary.log
left=$(( LIMIT - ($(date +%s) - T0) - 10 ))
timeout $left python3 $P time $R/time.jsonl $(( left - 15 )) decode > $R/time.log 2>&1
echo "time: exit $? at $(( $(date +%s) - T0 )) s" >> $R/summary.log
tar -czf $OUT/s43d.tgz -C $OUT s43d
cat $R/summary.log; grep -h "Error" $R/*.log | head; tail -n 10 $R/time.log
