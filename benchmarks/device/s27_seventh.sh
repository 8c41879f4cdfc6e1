#!/bin/bash
# Session 27, last device call (nvidia-h200, <= 230 s): the Gluon FP8 pass's new default of 40
# comm programs (chosen on s27_sixth.sh's twelve workloads) against 32 and 48 on workloads that
# choice never saw: kimi-k2, glm-5, deepseek-v3, qwen3-30b-a3b, EP 8 rank 0, 2,048 tokens,
# uniform / hot:0.1 (24 runs, exactly benchmarks/device/s27_gluon_default_plan.jsonl; model
# predictions registered first: calibration/predictions/h200_gluon_default_2026-12-02.jsonl).
export PYTHONPATH=.
T0=$(date +%s); R=$OUT/s27g; mkdir -p $R calibration/runs/h200_gluon
{ nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader; date -u; } > $R/gpu.txt 2>&1
timeout 200 python3 -m mok_kernels.bench --model kimi-k2,glm-5,deepseek-v3,qwen3-30b-a3b \
  --ep 8 --rank 0 --tokens 2048 --routing uniform,hot:0.1 --precision fp8 --fp8-kernel gluon \
  --systems mok --dispatch pull --combine push --minibatch 4096 --comm-sms 32,40,48 \
  --capacity 1.0 --iters 10 --warmup 3 --out calibration/runs/h200_gluon/default40.jsonl \
  > $R/bench.log 2>&1
echo "bench exit $? $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
cp calibration/runs/h200_gluon/default40.jsonl $R/ 2>/dev/null
tail -n 26 $R/bench.log | cut -c1-160; cat $R/gpu.txt
