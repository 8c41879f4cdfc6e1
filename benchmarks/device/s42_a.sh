#!/bin/bash
# Session 42, call 1 (nvidia-h200, <= 570 s): items of several column blocks in one flattened K
# loop (KernelConfig.gu_blocks / dn_blocks; benchmarks/device/s42_blocks.py). Phase 1 in
# parallel (compiles bound it): the bit comparisons against one block an item, the float32 test
# (tests/test_kernels_gpu.py::test_flattened_blocks_match_reference_and_bits, one stream per
# case) and the timed variants' compiles; phase 2 alone on the GPU: the timing.
R=$OUT/s42a; LIMIT=${LIMIT:-560}; source benchmarks/device/pytest_steps.sh
P=benchmarks/device/s42_blocks.py
K=tests/test_kernels_gpu.py::test_flattened_blocks_match_reference_and_bits
for i in 0 1 2 3 4 5 6; do step t$i "$K" -k "blocks$i" & done
( for i in 0 1 2 3 4 5 6 7 8; do echo "bits $i $R/bits.jsonl"; done
  for v in "1 1" "2 1" "1 2" "2 2" "1 4" "3 4"; do echo "warm qwen3-30b-a3b 8 4096 $v"; done
  for m in "minimax-m2 32" "qwen3-next-80b-a3b 8" "kimi-k2 8"; do
    for v in "1 1" "2 2" "1 4"; do echo "warm $m 4096 $v"; done; done
) | xargs -P 12 -L 1 sh -c 'timeout 330 python3 '$P' "$@" >> '$R'/phase1.log 2>&1' _
echo "phase 1 done at $(( $(date +%s) - T0 )) s" >> $R/summary.log
wait
echo "tests done at $(( $(date +%s) - T0 )) s" >> $R/summary.log
left=$(( LIMIT - ($(date +%s) - T0) - 15 ))
timeout $left python3 $P time $R/time.jsonl $(( left - 20 )) > $R/time.log 2>&1
echo "time: exit $? at $(( $(date +%s) - T0 )) s" >> $R/summary.log
cat $R/summary.log; grep -h "FAILED\|Error\|identical\": false" $R/*.log | head -20
grep -c '"identical": true' $R/bits.jsonl; cat $R/time.log | tail -20
