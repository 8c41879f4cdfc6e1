#!/bin/bash
# Session 26, fifth device call (nvidia-h200, <= 580 s). (1) Timed, alone: the registered Gluon
# FP8 + BF16 run (s26_gluon_reg.sh; predictions committed before it). (2) Untimed, in parallel:
# random shapes of a seed offset no run drew (27000): forward BF16, FP8 (Triton and Gluon),
# backward, group mode (LocalGroup), each against float32.
export PYTHONPATH=.
T0=$(date +%s)
bash benchmarks/device/s26_gluon_reg.sh > $OUT/reg_tail.log 2>&1
R=$OUT/s26r
P="python3 -m pytest -v -p no:cacheprovider tests/test_random_shapes_gpu.py"
export MOK_RANDOM_SHAPES_SEED=27000
REM=$(( 560 - ($(date +%s) - T0) ))
MOK_RANDOM_SHAPES_COUNT=24 timeout $REM $P -k forward > $R/t_random_fwd.log 2>&1 &
MOK_RANDOM_SHAPES_COUNT=12 timeout $REM $P -k fp8 > $R/t_random_fp8.log 2>&1 &
MOK_RANDOM_SHAPES_COUNT=8 timeout $REM $P -k backward > $R/t_random_bwd.log 2>&1 &
MOK_RANDOM_SHAPES_COUNT=12 timeout $REM $P -k local_group > $R/t_random_group.log 2>&1 &
wait
echo "all $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
cat $OUT/reg_tail.log | grep -v "^check" | tail -n 45 | cut -c1-200
grep -hE "FAILED|ERROR" $R/t_random_*.log | cut -c1-200
tail -qn 1 $R/t_random_*.log; cat $R/gpu.txt
