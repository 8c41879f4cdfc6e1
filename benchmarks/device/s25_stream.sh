#!/bin/bash
# Prepared in session 24 for the next one (nvidia-h200, <= 330 s; not run yet). The held-out
# decode runs read +4% slow in the median, and a relative least-squares fit of their analytic
# terms scales the steady state by 0.90 under uniform routing (0.99 under zipf / hot): passes
# that stream every local expert's weights with few rows each seem to run faster than the GEMM
# table's hbm_gbps (fitted over compute- and stream-bound phase points alike). This measures the
# megakernel's own GEMM phases alone (system mok-gemm) where they are stream-bound: four wide
# presets at EP 16 / 32 and 16-128 tokens per GPU (about 1-40 rows per local expert, every expert
# active under uniform routing), three routings each. Table points, not a held-out test; then fit
# hbm_gbps on the stream-bound points (mok_model/gemm_table.py) and refit (calibration.defaults).
export PYTHONPATH=.
T0=$(date +%s); R=$OUT/s25s; J=/tmp/junk25s; mkdir -p $R $J
{ nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader; date -u; } > $R/gpu.txt 2>&1
A="--eps 16,32 --tokens 16,32,64,128 --seed 25 --gemm-phases"
for m in kimi-k2 glm-5 deepseek-v3 qwen3-235b-a22b; do
  timeout 150 python3 -m mok_kernels.space_sweep $A --models $m --compile-only > $J/$m.log 2>&1 &
done
wait
echo "warm-up $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
REM=$(( 320 - ($(date +%s) - T0) ))
timeout $REM python3 -m mok_kernels.space_sweep $A --models kimi-k2,glm-5,deepseek-v3,qwen3-235b-a22b \
  --out $R/gemm_stream.jsonl --deadline-s $(( REM - 15 )) > $R/gemm_stream.log 2>&1
echo "sweep $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
