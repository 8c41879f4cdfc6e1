#!/bin/bash
# Prepared in session 32, not run (no device time left): six layer shapes drawn with seed 13
# (calibration/drawn_shapes/seed13/; nvidia-h200, <= 310 s), 30 workloads x 4 knob settings at 128-6,144 tokens, BF16;
# predictions registered before the run with the shipped parameters of 96611bc
# (calibration/predictions/h200_drawn13_2026-12-03.jsonl, plan beside it). The sweep times the
# default knobs last in every other workload (--alternate-default): `python -m
# calibration.first_timed RUNS --predictions PRED` then separates the timing's share of the
# default's excess at decode sizes from the model's.
# Compile warm-up in three processes first (untimed), then the timed sweep alone.
# Report: `python -m calibration.registered PRED RUNS --by model,tokens`.
export PYTHONPATH=.
T0=$(date +%s); R=$OUT/s33d; J=/tmp/junk33; mkdir -p $R $J calibration/runs/h200_drawn
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo "not an H200"; nvidia-smi -L; exit 0; }
{ nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader; date -u; git log -1 --format=%H; } > $R/gpu.txt 2>&1
SH=$(ls calibration/drawn_shapes/seed13/*.toml | paste -sd,)
A="--shapes $SH --per-shape 5 --tokens 128,640,2048,4608,6144 --seed 13"
B="--alternate-default"
FILES=(calibration/drawn_shapes/seed13/*.toml)
for i in 0 2 4; do
  timeout 110 python3 -m mok_kernels.space_sweep $A --models ${FILES[$i]},${FILES[$((i+1))]} \
    --compile-only > $J/warm$i.log 2>&1 &
done
wait
tail -n 3 $J/warm*.log > $R/warmup_tails.log 2>&1
echo "warm-up $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
REM=$(( 300 - ($(date +%s) - T0) ))
timeout $REM python3 -m mok_kernels.space_sweep $A $B --out $R/drawn13.jsonl \
  --deadline-s $(( REM - 15 )) > $R/drawn13.log 2>&1
echo "sweep $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
tail -n 4 $R/drawn13.log | cut -c1-200; cat $R/gpu.txt; wc -l $R/drawn13.jsonl
