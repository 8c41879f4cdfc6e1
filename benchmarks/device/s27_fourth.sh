#!/bin/bash
# Session 27, fourth device call (nvidia-h200, <= 330 s). (1) Timed, alone: the Gluon FP8 pass
# beside the Triton BF16 megakernel at small token counts (128 / 512 a rank), where the seed-9
# run found the model 20-39% fast on small passes: deepseek-v3, glm-5, kimi-k2, qwen3-30b-a3b,
# EP 8 rank 0, uniform / zipf:1.2, 24 / 32 comm SMs; 64 runs, exactly the plan
# benchmarks/device/s27_gluon_small_plan.jsonl, registered first
# (calibration/predictions/h200_gluon_small_2026-12-02.jsonl). (2) Timed, alone: the comm
# programs alone (mode=comm) at 16 / 24 / 32 / 48 programs, kimi-k2 and glm-5, 4,096 tokens
# (the copy's fixed cost and rate, mok_kernels/NOTES.md session 26 item 2).
export PYTHONPATH=.
T0=$(date +%s); R=$OUT/s27d; mkdir -p $R calibration/runs/h200_gluon
{ nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader; date -u; } > $R/gpu.txt 2>&1
timeout 200 python3 -m mok_kernels.bench --model deepseek-v3,glm-5,kimi-k2,qwen3-30b-a3b --ep 8 \
  --rank 0 --tokens 128,512 --routing uniform,zipf:1.2 --precision fp8,bf16 \
  --fp8-kernel gluon --systems mok --dispatch pull --combine push --minibatch 4096 \
  --comm-sms 24,32 --capacity 1.0 --iters 10 --warmup 3 \
  --out calibration/runs/h200_gluon/small.jsonl > $R/bench.log 2>&1
echo "bench exit $? $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
cp calibration/runs/h200_gluon/small.jsonl $R/ 2>/dev/null
timeout 120 python3 benchmarks/gluon_fp8_mok.py --iters 20 --warmup 5 --check-variants default \
  --checks kimi-k2-widths --variants mode=comm+comm=16,mode=comm+comm=24,mode=comm,mode=comm+comm=48 \
  > $R/comm.log 2>&1
echo "comm exit $? $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
tail -n 8 $R/bench.log | cut -c1-200; grep -vE "^check " $R/comm.log | tail -n 12; cat $R/gpu.txt
