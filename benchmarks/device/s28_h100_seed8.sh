#!/bin/bash
# Session 28, last device call (nvidia-h100-x1, <= 280 s): the Hopper transfer's copy rule
# (calibration/transfer.py HOPPER_HBM: the plain copy rate per SM moved by the HBM ratio, chosen
# after the first H100 runs) tested on runs it was not chosen on: session 25's seed-8 BF16 sweep
# (six drawn shapes x 5 knob settings x 96-8,192 tokens, EP 16 rank 0; its H200 records are
# calibration/runs/h200_drawn/drawn8.jsonl), h100-1's predictions registered first:
# calibration/predictions/h100_drawn8_2026-12-02.jsonl.
export PYTHONPATH=.
T0=$(date +%s); R=$OUT/s28d; J=/tmp/junk28; mkdir -p $R $J calibration/runs/h100
{ nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader; date -u; } > $R/gpu.txt 2>&1
python3 -c "import torch; print(torch.cuda.get_device_name(0))" >> $R/gpu.txt 2>&1
SH=$(ls calibration/drawn_shapes/seed8/*.toml | paste -sd,)
A="--shapes $SH --per-shape 5 --tokens 96,512,1536,3072,8192 --seed 8"
FILES=(calibration/drawn_shapes/seed8/*.toml)
for i in 0 2 4; do
  timeout 150 python3 -m mok_kernels.space_sweep $A --models ${FILES[$i]},${FILES[$((i+1))]} \
    --compile-only > $J/warm$i.log 2>&1 &
done
wait
tail -n 3 $J/warm*.log > $R/warmup_tails.log 2>&1
echo "warm-up $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
REM=$(( 270 - ($(date +%s) - T0) ))
timeout $REM python3 -m mok_kernels.space_sweep $A --out calibration/runs/h100/drawn8.jsonl \
  --deadline-s $(( REM - 15 )) > $R/drawn8.log 2>&1
echo "sweep $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
cp calibration/runs/h100/drawn8.jsonl $R/ 2>/dev/null
tail -n 4 $R/drawn8.log | cut -c1-200; cat $R/gpu.txt
