#!/bin/bash
# Session 26, second registered run (nvidia-h200): the Gluon FP8 pass (KernelConfig(precision="fp8",
# fp8_kernel="gluon")) and the Triton BF16 megakernel in the same run, on presets never run with
# the Gluon kernel (all pass mok_kernels/gluon_fp8/mok.py refusal() at EP 8 and mok bench's checks):
# glm-4.5, minimax-m2, qwen3-next-80b-a3b, mixtral-8x7b; EP 8 rank 0; 2,048 / 8,192 tokens;
# uniform / hot:0.1; pull / push, minibatch 4,096, 24 / 32 comm SMs, capacity 1.0: 64 records,
# exactly the plan benchmarks/device/s26_gluon_reg2_plan.jsonl whose analytic and simulator
# predictions (fp8_gluon_gemm_eff and fp8_gluon_copy_scale fitted to all 36 Gluon FP8 records of
# calibration/runs/h200_gluon/fp8_gluon.jsonl) were registered (and committed) before this runs:
#   python -m calibration.register --plan benchmarks/device/s26_gluon_reg2_plan.jsonl \
#       --out calibration/predictions/h200_gluon2_2026-12-02.jsonl
# Predicted: 64 passes summing to 203 ms (analytic), so (10 + 3) x that + ~1 s per configuration
# is about 67 s of GPU time.
# Then, on the records:
#   python -m calibration.registered calibration/predictions/h200_gluon2_2026-12-02.jsonl \
#       calibration/runs/h200_gluon/registered2.jsonl --by model,precision,tokens
export PYTHONPATH=.
R=$OUT/s26r2; mkdir -p $R
{ nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader; date -u; } > $R/gpu.txt 2>&1
T0=$(date +%s)
mkdir -p calibration/runs/h200_gluon
timeout 150 python3 -m mok_kernels.bench \
  --model glm-4.5,minimax-m2,qwen3-next-80b-a3b,mixtral-8x7b --ep 8 --rank 0 \
  --tokens 2048,8192 --routing uniform,hot:0.1 --precision fp8,bf16 \
  --fp8-kernel gluon --systems mok --dispatch pull --combine push --minibatch 4096 \
  --comm-sms 24,32 --capacity 1.0 --iters 10 --warmup 3 \
  --out calibration/runs/h200_gluon/registered2.jsonl > $R/bench.log 2>&1
echo "bench exit $? $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
cp calibration/runs/h200_gluon/registered2.jsonl $R/ 2>/dev/null
python3 -m calibration.registered calibration/predictions/h200_gluon2_2026-12-02.jsonl \
  calibration/runs/h200_gluon/registered2.jsonl --by model,precision,tokens > $R/registered.txt 2>&1
date -u >> $R/gpu.txt; cat $R/gpu.txt
tail -n 30 $R/bench.log | cut -c1-200
cat $R/registered.txt
