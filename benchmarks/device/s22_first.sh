#!/bin/bash
# Session 22, first device call (nvidia-h200, <= 540 s). (1) Untimed, in parallel: random shapes
# no run drew (tests/test_random_shapes_gpu.py with MOK_RANDOM_SHAPES_SEED=10000: 36 forward BF16,
# 10 FP8, 8 backward x recompute/saved, each against float32) and compile warm-up of the sweep.
# (2) Timed, alone: six layer shapes drawn with seed 6 (calibration/drawn_shapes/seed6/), 30
# workloads x 4 knob settings at 128-6144 tokens, uniform / zipf / hot; predictions registered
# before the run (calibration/predictions/h200_drawn6_2026-12-02.jsonl, plan beside it). Report:
# `python -m calibration.registered PRED RUNS`.
export PYTHONPATH=.
T0=$(date +%s); R=$OUT/s22; J=/tmp/junk22; mkdir -p $R $J   # results straight under $OUT
{ nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader; date -u; } > $R/gpu.txt 2>&1
SH=$(ls calibration/drawn_shapes/seed6/*.toml | paste -sd,)
A="--shapes $SH --per-shape 5 --tokens 128,384,1024,2560,6144 --seed 6"
for f in ${SH//,/ }; do
  timeout 150 python3 -m mok_kernels.space_sweep $A --models $f --compile-only > $J/$(basename $f).log 2>&1 &
done
P="python3 -m pytest -v -p no:cacheprovider tests/test_random_shapes_gpu.py"
MOK_RANDOM_SHAPES_SEED=10000 MOK_RANDOM_SHAPES_COUNT=36 timeout 290 $P -k forward > $R/t_random_fwd.log 2>&1 &
MOK_RANDOM_SHAPES_SEED=10000 MOK_RANDOM_SHAPES_COUNT=10 timeout 290 $P -k fp8 > $R/t_random_fp8.log 2>&1 &
MOK_RANDOM_SHAPES_SEED=10000 MOK_RANDOM_SHAPES_COUNT=8 timeout 290 $P -k backward > $R/t_random_bwd.log 2>&1 &
wait
echo "tests and warm-up $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
REM=$(( 520 - ($(date +%s) - T0) ))
timeout $REM python3 -m mok_kernels.space_sweep $A --out $R/drawn6.jsonl --deadline-s $(( REM - 15 )) \
  > $R/drawn6.log 2>&1
echo "sweep $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
