#!/bin/bash
# Session 31, call 6 (nvidia-h200, <= 505 s). (1) Untimed, in parallel: random shapes
# of a new seed offset (31000: forward BF16, Triton FP8, Gluon FP8, backward, LocalGroup) against
# float32, and the compile warm-up of the seed-11 sweep (three processes). (2) Timed, alone: six
# layer shapes drawn with seed 11 (calibration/drawn_shapes/seed11/), 30 workloads x 4 knob
# settings at 128-6,144 tokens; predictions registered before the run
# (calibration/predictions/h200_drawn11_2026-12-03.jsonl, plan beside it, shipped parameters).
# Report: `python -m calibration.registered PRED RUNS --by model,tokens`.
export PYTHONPATH=.
[ -d s31snap ] && cp -r s31snap/. . && rm -rf s31snap     # HEAD's versions of others' files
T0=$(date +%s); R=$OUT/s31d; J=/tmp/junk31; mkdir -p $R $J calibration/runs/h200_drawn
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo "not an H200"; nvidia-smi -L; exit 0; }
{ nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader; date -u; git log -1 --format=%H; } > $R/gpu.txt 2>&1
SH=$(ls calibration/drawn_shapes/seed11/*.toml | paste -sd,)
A="--shapes $SH --per-shape 5 --tokens 128,640,2048,4608,6144 --seed 11"
FILES=(calibration/drawn_shapes/seed11/*.toml)
for i in 0 2 4; do
  timeout 200 python3 -m mok_kernels.space_sweep $A --models ${FILES[$i]},${FILES[$((i+1))]} \
    --compile-only > $J/warm$i.log 2>&1 &
done
P="python3 -m pytest -v -p no:cacheprovider tests/test_random_shapes_gpu.py"
export MOK_RANDOM_SHAPES_SEED=31000
MOK_RANDOM_SHAPES_COUNT=16 timeout 200 $P -k forward > $R/t_random_fwd.log 2>&1 &
MOK_RANDOM_SHAPES_COUNT=8 timeout 200 $P -k "fp8 and not gluon" > $R/t_random_fp8.log 2>&1 &
MOK_RANDOM_SHAPES_COUNT=12 timeout 200 $P -k gluon > $R/t_random_gluon.log 2>&1 &
MOK_RANDOM_SHAPES_COUNT=6 timeout 200 $P -k backward > $R/t_random_bwd.log 2>&1 &
MOK_RANDOM_SHAPES_COUNT=8 timeout 200 $P -k local_group > $R/t_random_group.log 2>&1 &
wait
unset MOK_RANDOM_SHAPES_SEED
tail -n 3 $J/warm*.log > $R/warmup_tails.log 2>&1
echo "tests and warm-up $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
REM=$(( 500 - ($(date +%s) - T0) ))
timeout $REM python3 -m mok_kernels.space_sweep $A --out $R/drawn11.jsonl \
  --deadline-s $(( REM - 15 )) > $R/drawn11.log 2>&1
echo "sweep $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
grep -hE "passed|failed" $R/t_*.log | tail -n 5
grep -hE "FAILED|ERROR" $R/t_*.log | cut -c1-200 | head
tail -n 4 $R/drawn11.log | cut -c1-200; cat $R/gpu.txt
