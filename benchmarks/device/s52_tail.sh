#!/bin/bash
# Session 52 (any Hopper card, <= 175 s): the tails of the two suites s51_call1.sh cut at its
# 410 s step limit (every test they reached passed): the kernel suite after its first 75 tests
# and the backward suite after its first 76, in collection order, run side by side.
export PYTHONPATH=.
R=$OUT/s52tail; mkdir -p $R; T0=$(date +%s)
{ git log -1 --format=%H; nvidia-smi --query-gpu=name --format=csv,noheader; } > $R/gpu.txt
tail_ids() {  # tail_ids SKIP PYTEST-ARGS...: node ids after the first SKIP
  local skip=$1; shift
  python3 -m pytest --collect-only -q -p no:cacheprovider "$@" | grep "::" | tail -n +$(( skip + 1 ))
}
K=$(tail_ids 75 tests/test_kernels_gpu.py -k "not bench and not rotated and not fused_schedule and not local_group")
B=$(tail_ids 76 tests/test_backward_gpu.py)
echo "kernel tail $(echo $K | wc -w) tests, backward tail $(echo $B | wc -w)" >> $R/gpu.txt
timeout 150 python3 -m pytest -q -p no:cacheprovider $K > $R/k_tail.log 2>&1 &
timeout 150 python3 -m pytest -q -p no:cacheprovider $B > $R/bwd_tail.log 2>&1 &
wait
echo "done at $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
cat $R/gpu.txt; tail -n 3 $R/k_tail.log $R/bwd_tail.log; grep -h "FAILED\|Error" $R/*.log | head
