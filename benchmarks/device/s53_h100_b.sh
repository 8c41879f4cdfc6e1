#!/bin/bash
# Session 53, second H100 call (<= 560 s). 1. Seed 21's workloads with the megakernel's own GEMM
# phases alone (system mok-gemm, copies skipped): is the H100 gap of the heavy drawn shape
# (syn21-h6912-i3712-e64-k10-s1, MoK 1.4-1.9x the library's GEMMs) in the GEMMs or the copies?
# Also the first measured points of an H100 GEMM table (h100-1's is transferred from h200-1).
# 2. The rest of seed offset 53000's random shapes (s53_h100.sh reached forward 24 + group 2).
export PYTHONPATH=.
T0=$(date +%s); R=$OUT/s53g; J=/tmp/junk_s53g; mkdir -p $R $J
{ nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader; date -u; } > $R/gpu.txt
FILES=(calibration/drawn_shapes/seed21/*.toml)
A="--shapes $(ls calibration/drawn_shapes/seed21/*.toml | paste -sd,) --per-shape 5 --tokens 128,640,2048,4608,6144 --seed 21 --gemm-phases"
for i in 0 2 4; do
  timeout 120 python3 -m mok_kernels.space_sweep $A --models ${FILES[$i]},${FILES[$((i+1))]} \
    --compile-only > $J/warm$i.log 2>&1 &
done
wait
echo "warm-up $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
timeout 150 python3 -m mok_kernels.space_sweep $A --out $R/gemm21.jsonl --deadline-s 135 \
  > $R/gemm21.log 2>&1
echo "gemm phases $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
export MOK_RANDOM_SHAPES_SEED=53000
L=$(( 540 - ($(date +%s) - T0) ))
timeout $L python3 -m pytest -q -p no:cacheprovider tests/test_random_shapes_gpu.py \
  -k "local_group or fp8" > $R/rand_group_fp8.log 2>&1 &
timeout $L python3 -m pytest -q -p no:cacheprovider tests/test_random_shapes_gpu.py \
  -k "backward" > $R/rand_bwd.log 2>&1 &
wait
echo "random shapes $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
cat $R/gpu.txt; tail -n 2 $R/rand_*.log; grep -h "FAILED\|Error" $R/*.log | head; tail -n 3 $R/gemm21.log | cut -c1-200
