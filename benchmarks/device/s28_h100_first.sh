#!/bin/bash
# Session 28, first device call (nvidia-h100-x1, <= 570 s): the first runs on an H100, a GPU
# no parameter was fitted on. (1) Untimed, in parallel: the compile warm-up of the sweep (three
# processes) and random forward shapes of seed offset 28000 against float32 on this GPU.
# (2) Timed, alone: exactly session 27's seed-9 BF16 sweep (six drawn shapes x 5 knob settings
# x 96-8,192 tokens, EP 8 rank 0; its H200 records are calibration/runs/h200_drawn/drawn9.jsonl),
# whose h100-1 predictions (h200-1's parameters moved by calibration/transfer.py
# --write-hopper, no H100 fit) were registered first:
# calibration/predictions/h100_drawn9_2026-12-02.jsonl.
# Report: python -m calibration.registered PRED calibration/runs/h100/drawn9.jsonl --by model,tokens
export PYTHONPATH=.
T0=$(date +%s); R=$OUT/s28a; J=/tmp/junk28; mkdir -p $R $J calibration/runs/h100
{ nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader; date -u; } > $R/gpu.txt 2>&1
python3 -c "import torch; print(torch.cuda.get_device_name(0))" >> $R/gpu.txt 2>&1
SH=$(ls calibration/drawn_shapes/seed9/*.toml | paste -sd,)
A="--shapes $SH --per-shape 5 --tokens 96,512,1536,3072,8192 --seed 9"
FILES=(calibration/drawn_shapes/seed9/*.toml)
for i in 0 2 4; do
  timeout 230 python3 -m mok_kernels.space_sweep $A --models ${FILES[$i]},${FILES[$((i+1))]} \
    --compile-only > $J/warm$i.log 2>&1 &
done
MOK_RANDOM_SHAPES_SEED=28000 MOK_RANDOM_SHAPES_COUNT=12 timeout 230 \
  python3 -m pytest -v -p no:cacheprovider tests/test_random_shapes_gpu.py -k forward \
  > $R/t_random_fwd.log 2>&1 &
wait
tail -n 3 $J/warm*.log > $R/warmup_tails.log 2>&1
echo "tests and warm-up $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
REM=$(( 565 - ($(date +%s) - T0) ))
timeout $REM python3 -m mok_kernels.space_sweep $A --out calibration/runs/h100/drawn9.jsonl \
  --deadline-s $(( REM - 15 )) > $R/drawn9.log 2>&1
echo "sweep $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
cp calibration/runs/h100/drawn9.jsonl $R/ 2>/dev/null
grep -cE "PASSED" $R/t_random_fwd.log; grep -E "FAILED|ERROR" $R/t_random_fwd.log | cut -c1-160 | head
tail -n 3 $R/t_random_fwd.log; tail -n 4 $R/drawn9.log | cut -c1-200; cat $R/gpu.txt
