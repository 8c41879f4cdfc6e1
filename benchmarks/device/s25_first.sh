#!/bin/bash
# Session 25, third device call (nvidia-h200, <= 570 s). (1) Untimed, in parallel: random shapes
# no run drew (tests/test_random_shapes_gpu.py with MOK_RANDOM_SHAPES_SEED=25000: 36 forward
# BF16, 12 FP8, 8 backward x recompute/saved, 16 group-mode (LocalGroup) cases, each against
# float32) and the compile warm-up of the sweep (three processes). (2) Timed, alone: six layer
# shapes drawn with seed 8 (calibration/drawn_shapes/seed8/), 30 workloads x 4 knob settings at
# 96-8192 tokens, uniform / zipf / hot; predictions registered before the run
# (calibration/predictions/h200_drawn8_2026-12-02.jsonl, plan beside it, shipped parameters of
# session 23's refit, unchanged since). Report: `python -m calibration.registered PRED RUNS`.
export PYTHONPATH=.
T0=$(date +%s); R=$OUT/s25; J=/tmp/junk25; mkdir -p $R $J
{ nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader; date -u; } > $R/gpu.txt 2>&1
SH=$(ls calibration/drawn_shapes/seed8/*.toml | paste -sd,)
A="--shapes $SH --per-shape 5 --tokens 96,512,1536,3072,8192 --seed 8"
FILES=(calibration/drawn_shapes/seed8/*.toml)
for i in 0 2 4; do
  timeout 200 python3 -m mok_kernels.space_sweep $A --models ${FILES[$i]},${FILES[$((i+1))]} \
    --compile-only > $J/warm$i.log 2>&1 &
done
P="python3 -m pytest -v -p no:cacheprovider tests/test_random_shapes_gpu.py"
export MOK_RANDOM_SHAPES_SEED=25000
MOK_RANDOM_SHAPES_COUNT=36 timeout 280 $P -k forward > $R/t_random_fwd.log 2>&1 &
MOK_RANDOM_SHAPES_COUNT=12 timeout 280 $P -k fp8 > $R/t_random_fp8.log 2>&1 &
MOK_RANDOM_SHAPES_COUNT=8 timeout 280 $P -k backward > $R/t_random_bwd.log 2>&1 &
MOK_RANDOM_SHAPES_COUNT=16 timeout 280 $P -k local_group > $R/t_random_group.log 2>&1 &
wait
tail -n 3 $J/warm*.log > $R/warmup_tails.log 2>&1
echo "tests and warm-up $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
REM=$(( 560 - ($(date +%s) - T0) ))
timeout $REM python3 -m mok_kernels.space_sweep $A --out $R/drawn8.jsonl --deadline-s $(( REM - 15 )) \
  > $R/drawn8.log 2>&1
echo "sweep $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
tail -n 4 $R/t_random_*.log; tail -n 5 $R/drawn8.log; cat $R/gpu.txt
