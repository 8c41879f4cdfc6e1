#!/bin/bash
# Session 25, fifth device call (nvidia-h200, <= 560 s). (1) Timed, alone: the grouped Gluon FP8
# ws2d1 (s25_fp8_grouped.sh). (2) Untimed, in parallel: the group-mode fixes of this session on
# one GPU (LocalGroup: every rank its own launch, the cross-GPU protocol): a one-hot overflow on
# rank 0 must leave rank 1's output NaN and raise (tests/test_kernels_gpu.py
# ::test_local_group_overflow_on_one_rank_fails_every_rank), the LocalGroup suite and the
# single-GPU overflow / trap tests unchanged, and 16 random group-mode shapes of a new seed
# offset (26000) against float32.
export PYTHONPATH=.
T0=$(date +%s); R=$OUT/s25x; mkdir -p $R
bash benchmarks/device/s25_fp8_grouped.sh > $R/fp8_grouped_tail.log 2>&1
cp -r $OUT/s25g $R/ 2>/dev/null
echo "fp8 grouped $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
P="python3 -m pytest -v -p no:cacheprovider"
timeout 300 $P tests/test_kernels_gpu.py -k "local_group" > $R/t_local_group.log 2>&1 &
timeout 300 $P tests/test_kernels_gpu.py -k "overflow or trap or stall" > $R/t_overflow.log 2>&1 &
MOK_RANDOM_SHAPES_SEED=26000 MOK_RANDOM_SHAPES_COUNT=16 timeout 330 \
  $P tests/test_random_shapes_gpu.py -k local_group > $R/t_random_group.log 2>&1 &
wait
echo "tests $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
tail -n 30 $R/fp8_grouped_tail.log
grep -E "PASSED|FAILED|ERROR" $R/t_local_group.log $R/t_overflow.log | sed 's/.*:://' | cut -c1-150
tail -n 2 $R/t_*.log; cat $R/gpu.txt
