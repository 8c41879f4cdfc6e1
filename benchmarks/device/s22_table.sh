#!/bin/bash
# Session 22 (2026-12-02), nvidia-h200, <= 330 s: the megakernel's own GEMM phases (system
# mok-gemm) on six synthetic narrow-expert shapes at wide hidden sizes (calibration/table_shapes/:
# H 4096 / 7168 x I 256 / 384 / 512, 256 experts, top-8), six workloads each (EP 8 / 32, 256-4096
# tokens, uniform / zipf / hot), for the GEMM table: its narrow shapes were qwen3's at H 2048 only,
# and held-out narrow shapes at H > 4096 read 7-9% fast. Not a held-out test (table points).
export PYTHONPATH=.
T0=$(date +%s); R=$OUT/s22t; J=/tmp/junk22t; mkdir -p $R $J
{ nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader; date -u; } > $R/gpu.txt 2>&1
SH=$(ls calibration/table_shapes/*.toml | paste -sd,)
A="--shapes $SH --per-shape 6 --eps 8,32 --tokens 256,1024,4096 --seed 22 --gemm-phases"
for f in ${SH//,/ }; do
  timeout 150 python3 -m mok_kernels.space_sweep $A --models $f --compile-only > $J/$(basename $f).log 2>&1 &
done
wait
echo "warm-up $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
REM=$(( 320 - ($(date +%s) - T0) ))
timeout $REM python3 -m mok_kernels.space_sweep $A --out $R/table_narrow.jsonl --deadline-s $(( REM - 15 )) \
  > $R/table_narrow.log 2>&1
echo "sweep $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
