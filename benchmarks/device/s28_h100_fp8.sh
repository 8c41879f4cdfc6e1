#!/bin/bash
# Session 28 (nvidia-h100-x1, <= 400 s): issue 14's FP8 question on the other Hopper GPU.
# kimi-k2 and glm-5, EP 8 rank 0, 4,096 tokens, uniform: the Gluon FP8 pass and the Triton BF16
# megakernel in one run, each at minibatch 2,048 / 4,096 x 16-40 comm programs (so each side's
# best setting is compared, not one chosen for the other), plus the GEMM phases alone; exactly the
# plan benchmarks/device/s28_fp8_h100_plan.jsonl whose h100-1 predictions were registered first
# (calibration/predictions/h100_fp8_kimi_glm_2026-12-02.jsonl).
export PYTHONPATH=.
T0=$(date +%s); R=$OUT/s28_fp8; mkdir -p $R calibration/runs/h100
{ nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader; date -u; } > $R/gpu.txt 2>&1
timeout 380 python3 -m mok_kernels.bench --model kimi-k2,glm-5 --ep 8 --rank 0 --tokens 4096 \
  --routing uniform --precision fp8,bf16 --fp8-kernel gluon --systems mok,gemm-only \
  --dispatch pull --combine push --minibatch 2048,4096 --comm-sms 16,24,32,40 --capacity 1.0 \
  --iters 20 --warmup 5 --out calibration/runs/h100/fp8_kimi_glm.jsonl > $R/bench.log 2>&1
echo "bench exit $? $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
cp calibration/runs/h100/fp8_kimi_glm.jsonl $R/ 2>/dev/null
grep -E "ms" $R/bench.log | cut -c1-160 | tail -40; cat $R/gpu.txt
