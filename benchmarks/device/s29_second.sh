#!/bin/bash
# Session 29, second device call (nvidia-h200, <= 560 s), timed, one job at a time.
# (1) The Gluon FP8 pass beside the Triton BF16 megakernel on the six seed-10 drawn shapes: EP 8
# rank 0, 1,024 / 4,096 tokens, uniform / hot:0.1, pull / push, minibatch 4,096, 32 / 40 comm
# SMs, capacity 1.0; 96 runs, exactly benchmarks/device/s29_gluon_drawn10_plan.jsonl, whose
# predictions were registered first (calibration/predictions/h200_gluon_drawn10_2026-12-02.jsonl).
# (2) Where the training backward's time goes (never measured): the A / X / W split of the
# training tiles (saved g/u, bn_a 128, bn_x 256) by the diag option (1: no W items, 2: no X
# items, 3: neither; diagnostic records), kimi-k2 / glm-5 EP 8 rank 0, 1,024 / 4,096 tokens,
# beside the same rank's backward GEMMs alone in the same run.
export PYTHONPATH=.
T0=$(date +%s); R=$OUT/s29b; mkdir -p $R calibration/runs/h200_gluon calibration/runs/h200
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo "not an H200"; nvidia-smi -L; exit 0; }
{ nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader; date -u; } > $R/gpu.txt 2>&1
M=$(ls calibration/drawn_shapes/seed10/*.toml | paste -sd,)
timeout 300 python3 -m mok_kernels.bench --model $M --ep 8 --rank 0 \
  --tokens 1024,4096 --routing uniform,hot:0.1 --precision fp8,bf16 \
  --fp8-kernel gluon --systems mok --dispatch pull --combine push --minibatch 4096 \
  --comm-sms 32,40 --capacity 1.0 --iters 10 --warmup 3 \
  --out calibration/runs/h200_gluon/drawn10.jsonl > $R/bench.log 2>&1
echo "bench exit $? $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
cp calibration/runs/h200_gluon/drawn10.jsonl $R/ 2>/dev/null
TL="saved_gu=1,bn_a=128,bn_x=256"
REM=$(( 555 - ($(date +%s) - T0) ))
timeout $REM python3 -m mok_kernels.bench --pass bwd --model kimi-k2,glm-5 --ep 8 --rank 0 \
  --tokens 1024,4096 --routing uniform --minibatch 4096 --comm-sms 32 --capacity 1.0 \
  --systems mok,gemm-only --bwd-tiles "$TL;$TL,diag=1;$TL,diag=2;$TL,diag=3" \
  --out $R/bwd_diag.jsonl > $R/bwd_diag.log 2>&1
echo "bwd diag exit $? $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
tail -n 14 $R/bench.log | cut -c1-220; tail -n 20 $R/bwd_diag.log | cut -c1-220; cat $R/gpu.txt
