#!/bin/bash
# Session 32, last call (nvidia-h200, <= 310 s): six layer shapes drawn with seed 12
# (calibration/drawn_shapes/seed12/), 30 workloads x 4 knob settings at 128-6,144 tokens, BF16;
# predictions registered before the run with the shipped parameters
# (calibration/predictions/h200_drawn12_2026-12-03.jsonl, plan beside it). The first sweep whose
# first setting a workload times is run once untimed before (space_sweep, commit 87959dc):
# `python -m calibration.first_timed` on its file says whether the +3.5% at <= 640 tokens is gone.
# Compile warm-up in three processes first (untimed), then the timed sweep alone.
# Report: `python -m calibration.registered PRED RUNS --by model,tokens`.
export PYTHONPATH=.
T0=$(date +%s); R=$OUT/s32d; J=/tmp/junk32; mkdir -p $R $J calibration/runs/h200_drawn
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo "not an H200"; nvidia-smi -L; exit 0; }
{ nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader; date -u; git log -1 --format=%H; } > $R/gpu.txt 2>&1
SH=$(ls calibration/drawn_shapes/seed12/*.toml | paste -sd,)
A="--shapes $SH --per-shape 5 --tokens 128,640,2048,4608,6144 --seed 12"
FILES=(calibration/drawn_shapes/seed12/*.toml)
for i in 0 2 4; do
  timeout 110 python3 -m mok_kernels.space_sweep $A --models ${FILES[$i]},${FILES[$((i+1))]} \
    --compile-only > $J/warm$i.log 2>&1 &
done
wait
tail -n 3 $J/warm*.log > $R/warmup_tails.log 2>&1
echo "warm-up $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
REM=$(( 300 - ($(date +%s) - T0) ))
timeout $REM python3 -m mok_kernels.space_sweep $A --out $R/drawn12.jsonl \
  --deadline-s $(( REM - 15 )) > $R/drawn12.log 2>&1
echo "sweep $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
tail -n 4 $R/drawn12.log | cut -c1-200; cat $R/gpu.txt; wc -l $R/drawn12.jsonl
