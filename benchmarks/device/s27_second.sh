#!/bin/bash
# Session 27, second device call (nvidia-h200, <= 570 s). (1) Untimed, in parallel: the Gluon
# FP8 pass with I not a multiple of 128 (zero-padded on the host; the two new cases of
# tests/test_gluon_fp8_gpu.py and the random Gluon draws of seed offset 27500, which it
# refused before) and the compile warm-up of the sweep (three processes). (2) Timed, alone:
# six layer shapes drawn with seed 9 (calibration/drawn_shapes/seed9/), 30 workloads x 4 knob
# settings at 96-8,192 tokens; predictions registered before the run
# (calibration/predictions/h200_drawn9_2026-12-02.jsonl, plan beside it, shipped parameters).
# Report: `python -m calibration.registered PRED RUNS --by model,tokens`.
export PYTHONPATH=.
T0=$(date +%s); R=$OUT/s27b; J=/tmp/junk27; mkdir -p $R $J
{ nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader; date -u; } > $R/gpu.txt 2>&1
SH=$(ls calibration/drawn_shapes/seed9/*.toml | paste -sd,)
A="--shapes $SH --per-shape 5 --tokens 96,512,1536,3072,8192 --seed 9"
FILES=(calibration/drawn_shapes/seed9/*.toml)
for i in 0 2 4; do
  timeout 220 python3 -m mok_kernels.space_sweep $A --models ${FILES[$i]},${FILES[$((i+1))]} \
    --compile-only > $J/warm$i.log 2>&1 &
done
P="python3 -m pytest -v -p no:cacheprovider"
timeout 220 $P tests/test_gluon_fp8_gpu.py -k "h4608 or h2304" > $R/t_gluon_pad.log 2>&1 &
MOK_RANDOM_SHAPES_SEED=27500 MOK_RANDOM_SHAPES_COUNT=16 timeout 220 \
  $P tests/test_random_shapes_gpu.py -k gluon > $R/t_random_gluon.log 2>&1 &
wait
tail -n 3 $J/warm*.log > $R/warmup_tails.log 2>&1
echo "tests and warm-up $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
REM=$(( 565 - ($(date +%s) - T0) ))
timeout $REM python3 -m mok_kernels.space_sweep $A --out $R/drawn9.jsonl --deadline-s $(( REM - 15 )) \
  > $R/drawn9.log 2>&1
echo "sweep $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
grep -E "PASSED|FAILED|ERROR" $R/t_gluon_pad.log $R/t_random_gluon.log | sed 's/.*:://' | cut -c1-160
tail -n 3 $R/t_*.log; tail -n 4 $R/drawn9.log | cut -c1-200; cat $R/gpu.txt
