#!/bin/bash
# Session 28 (nvidia-h200, <= 420 s): does a smaller minibatch speed the Gluon FP8 pass on the
# H200 too (on the H100 minibatch 2,048 beat 4,096, s28_h100_fp8.sh)? kimi-k2 and glm-5, EP 8
# rank 0, 4,096 tokens, uniform: FP8 Gluon and the BF16 megakernel at minibatch 1,024 / 2,048 /
# 4,096 x 24 / 32 / 40 comm programs, plus the GEMM phases alone; exactly the plan
# benchmarks/device/s28_fp8_h200_plan.jsonl, registered first
# (calibration/predictions/h200_fp8_minibatch_2026-12-02.jsonl). Then the SM clock under the MoK
# load on this GPU (s28_clocks.sh, 300 iterations).
export PYTHONPATH=.
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo "not an H200: nothing run"; exit 0; }
T0=$(date +%s); R=$OUT/s28_fp8h200; mkdir -p $R calibration/runs/h200_gluon
{ nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader; date -u; } > $R/gpu.txt 2>&1
timeout 300 python3 -m mok_kernels.bench --model kimi-k2,glm-5 --ep 8 --rank 0 --tokens 4096 \
  --routing uniform --precision fp8,bf16 --fp8-kernel gluon --systems mok,gemm-only \
  --dispatch pull --combine push --minibatch 1024,2048,4096 --comm-sms 24,32,40 --capacity 1.0 \
  --iters 20 --warmup 5 --out calibration/runs/h200_gluon/minibatch.jsonl > $R/bench.log 2>&1
echo "bench exit $? $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
cp calibration/runs/h200_gluon/minibatch.jsonl $R/ 2>/dev/null
TAG=h200c ITERS=300 timeout 100 bash benchmarks/device/s28_clocks.sh > /dev/null 2>&1
grep -E "ms" $R/bench.log | cut -c1-160 | tail -40; cat $R/gpu.txt $OUT/s28_h200c/gpu.txt
