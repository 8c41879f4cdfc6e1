#!/bin/bash
# Session 28 (nvidia-h200, <= 300 s): the Gluon FP8 pass at minibatch 2,048 against its default
# 4,096, at 32 and 40 comm programs, on the twelve workloads of s27_sixth.sh (six presets, EP 8
# rank 0, 1,024 / 4,096 tokens) and the four of s27_seventh.sh (kimi-k2, glm-5, deepseek-v3,
# qwen3-30b at 2,048 tokens), uniform; exactly benchmarks/device/s28_gluon_mb_plan.jsonl,
# registered first (calibration/predictions/h200_gluon_mb_2026-12-02.jsonl).
export PYTHONPATH=.
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo "not an H200: nothing run"; exit 0; }
T0=$(date +%s); R=$OUT/s28_mb; mkdir -p $R calibration/runs/h200_gluon
{ nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader; date -u; } > $R/gpu.txt 2>&1
B="python3 -m mok_kernels.bench --ep 8 --rank 0 --routing uniform --precision fp8 --fp8-kernel gluon
   --systems mok --dispatch pull --combine push --minibatch 2048,4096 --comm-sms 32,40
   --capacity 1.0 --iters 10 --warmup 3 --out calibration/runs/h200_gluon/minibatch2.jsonl"
timeout 180 $B --model glm-4.5,minimax-m2,qwen3-235b-a22b,llama4-maverick,mixtral-8x7b,qwen3-next-80b-a3b \
  --tokens 1024,4096 > $R/bench.log 2>&1
timeout 90 $B --model kimi-k2,glm-5,deepseek-v3,qwen3-30b-a3b --tokens 2048 >> $R/bench.log 2>&1
echo "bench exit $? $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
cp calibration/runs/h200_gluon/minibatch2.jsonl $R/ 2>/dev/null
grep -E " ms" $R/bench.log | cut -c1-150 | tail -64; cat $R/gpu.txt
