#!/bin/bash
# Usage: [TOTAL=300] bash benchmarks/device/drawn_seed.sh SEED TAG (an H200 or H100, <= TOTAL + 10 s)
# The registered drawn-shape run of one seed: the six shapes of calibration/drawn_shapes/seedSEED/,
# 30 workloads x 4 knob settings at 128-6,144 tokens, BF16, the default knobs timed last in every
# other workload (--alternate-default). Compile warm-up in three processes first (untimed), then
# the timed sweep alone. Writes $OUT/TAG/drawnSEED.jsonl (records), its log and gpu.txt.
# Register the predictions first (calibration/predictions/h200_drawnSEED_*.jsonl, or h100_ with
# --hardware h100-1 for an H100); report with
# `python -m calibration.registered PRED RUNS --by model,tokens` and
# `python -m calibration.first_timed RUNS --predictions PRED`.
S=${1:?seed}; TAG=${2:?tag}
export PYTHONPATH=.
T0=$(date +%s); R=$OUT/$TAG; J=/tmp/junk_$TAG; mkdir -p $R $J calibration/runs/h200_drawn
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q "H200\|H100" || { echo "not an H100 or H200"; nvidia-smi -L; exit 0; }
{ nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader; date -u; git log -1 --format=%H; } > $R/gpu.txt 2>&1
SH=$(ls calibration/drawn_shapes/seed$S/*.toml | paste -sd,)
A="--shapes $SH --per-shape 5 --tokens 128,640,2048,4608,6144 --seed $S"
FILES=(calibration/drawn_shapes/seed$S/*.toml)
for i in 0 2 4; do
  timeout 110 python3 -m mok_kernels.space_sweep $A --models ${FILES[$i]},${FILES[$((i+1))]} \
    --compile-only > $J/warm$i.log 2>&1 &
done
wait
tail -n 3 $J/warm*.log > $R/warmup_tails.log 2>&1
echo "warm-up $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
# SM clock, power and throttle reasons every 200 ms through the timed part (do heavy GEMMs
# run below the card's clock?): $R/clocks.csv, stopped when the timing ends
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active \
  --format=csv -lms 200 > $R/clocks.csv 2>&1 & CLOCKS=$!
REM=$(( ${TOTAL:-300} - ($(date +%s) - T0) ))
timeout $REM python3 -m mok_kernels.space_sweep $A --alternate-default --out $R/drawn$S.jsonl \
  --deadline-s $(( REM - 15 )) > $R/drawn$S.log 2>&1
echo "sweep $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
kill $CLOCKS 2>/dev/null
tail -n 4 $R/drawn$S.log | cut -c1-200; cat $R/gpu.txt; wc -l $R/drawn$S.jsonl
