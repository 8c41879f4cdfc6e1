#!/bin/bash
# Prepared in session 33, not run: six layer shapes drawn with seed 14
# (calibration/drawn_shapes/seed14/; nvidia-h200, <= 310 s), 30 workloads x 4 knob settings at
# 128-6,144 tokens, BF16; predictions registered before the run with the parameters shipped after
# session 33's merges (calibration/predictions/h200_drawn14_2026-12-03.jsonl, plan beside it).
# The default knobs are timed last in every other workload (--alternate-default).
# Compile warm-up in three processes first (untimed), then the timed sweep alone.
# Report: `python -m calibration.registered PRED RUNS --by model,tokens` and
# `python -m calibration.first_timed RUNS --predictions PRED`.
export PYTHONPATH=.
T0=$(date +%s); R=$OUT/s34d; J=/tmp/junk34; mkdir -p $R $J calibration/runs/h200_drawn
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo "not an H200"; nvidia-smi -L; exit 0; }
{ nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader; date -u; git log -1 --format=%H; } > $R/gpu.txt 2>&1
SH=$(ls calibration/drawn_shapes/seed14/*.toml | paste -sd,)
A="--shapes $SH --per-shape 5 --tokens 128,640,2048,4608,6144 --seed 14"
B="--alternate-default"
FILES=(calibration/drawn_shapes/seed14/*.toml)
for i in 0 2 4; do
  timeout 110 python3 -m mok_kernels.space_sweep $A --models ${FILES[$i]},${FILES[$((i+1))]} \
    --compile-only > $J/warm$i.log 2>&1 &
done
wait
tail -n 3 $J/warm*.log > $R/warmup_tails.log 2>&1
echo "warm-up $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
REM=$(( 300 - ($(date +%s) - T0) ))
timeout $REM python3 -m mok_kernels.space_sweep $A $B --out $R/drawn14.jsonl \
  --deadline-s $(( REM - 15 )) > $R/drawn14.log 2>&1
echo "sweep $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
tail -n 4 $R/drawn14.log | cut -c1-200; cat $R/gpu.txt; wc -l $R/drawn14.jsonl
