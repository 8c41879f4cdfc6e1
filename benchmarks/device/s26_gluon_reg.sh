#!/bin/bash
# Session 26, registered run (nvidia-h200): the Gluon FP8 pass (KernelConfig(precision="fp8",
# fp8_kernel="gluon")) and the Triton BF16 megakernel in the same run, on workloads NOT in
# calibration/runs/h200_gluon/fp8_gluon.jsonl (the records fp8_gluon_gemm_eff was fitted to):
# qwen3-30b-a3b, deepseek-v3, llama4-maverick, kimi-k2; EP 8 rank 0; 2,048 / 8,192 tokens;
# uniform / zipf:1.2; pull / push, minibatch 4,096, 24 / 32 comm SMs, capacity 1.0: 64 records,
# exactly the plan benchmarks/device/s26_gluon_reg_plan.jsonl whose analytic and simulator
# predictions were registered (and committed) before this runs:
#   python -m calibration.register --plan benchmarks/device/s26_gluon_reg_plan.jsonl \
#       --out calibration/predictions/h200_gluon_2026-12-02.jsonl
# Then, on the records:
#   python -m calibration.registered calibration/predictions/h200_gluon_2026-12-02.jsonl \
#       calibration/runs/h200_gluon/registered.jsonl --by model,precision,tokens
export PYTHONPATH=.
R=$OUT/s26r; mkdir -p $R
{ nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader; date -u; } > $R/gpu.txt 2>&1
T0=$(date +%s)
mkdir -p calibration/runs/h200_gluon
timeout 300 python3 -m mok_kernels.bench \
  --model qwen3-30b-a3b,deepseek-v3,llama4-maverick,kimi-k2 --ep 8 --rank 0 \
  --tokens 2048,8192 --routing uniform,zipf:1.2 --precision fp8,bf16 \
  --fp8-kernel gluon --systems mok --dispatch pull --combine push --minibatch 4096 \
  --comm-sms 24,32 --capacity 1.0 --iters 10 --warmup 3 \
  --out calibration/runs/h200_gluon/registered.jsonl > $R/bench.log 2>&1
echo "bench exit $? $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
cp calibration/runs/h200_gluon/registered.jsonl $R/ 2>/dev/null
python3 -m calibration.registered calibration/predictions/h200_gluon_2026-12-02.jsonl \
  calibration/runs/h200_gluon/registered.jsonl --by model,precision,tokens > $R/registered.txt 2>&1
date -u >> $R/gpu.txt; cat $R/gpu.txt
tail -n 30 $R/bench.log | cut -c1-200
cat $R/registered.txt
