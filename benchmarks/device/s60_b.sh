#!/bin/bash
# Session 60 (either card, <= 400 s): is a warp-specialized Gluon BF16 core the lever for issue
# 13's narrow experts? 1. benchmarks/gluon_bf16_grouped.py: the BF16 grouped GEMM in Gluon, each
# form checked (every row against float32, nothing past the end) and timed beside
# torch._grouped_mm on a rank's rows at EP 8 x 4,096 tokens (qwen3-30b, qwen3-next, kimi-k2,
# glm-5; gate|up and down). 2. In the same call, the megakernel's own GEMM phases alone
# (mok-gemm) beside the library's (gemm-only) on the same four presets, EP 8 x 4,096, so the three
# rates meet on one card. Everything lands in $OUT/s60b.tgz.
export PYTHONPATH=.
T0=$(date +%s); FINAL=$OUT; export OUT=/tmp/s60b; R=$OUT/s60b; mkdir -p $R
trap 'tar -czf $FINAL/s60b.tgz -C $OUT .' EXIT
{ nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader; date -u; git log -1 --format=%H; } > $R/gpu.txt
timeout 240 python3 benchmarks/gluon_bf16_grouped.py --out $R/gluon_bf16.json > $R/gluon_bf16.log 2>&1
echo "gluon bf16 rc $? $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
L=$(( ${LIMIT:-390} - ($(date +%s) - T0) ))
timeout $L python3 -m mok_kernels.bench --rank 0 --systems mok-gemm,gemm-only \
  --model qwen3-30b-a3b,qwen3-next-80b-a3b,kimi-k2,glm-5 --ep 8 --tokens 4096 --routing uniform \
  --capacity 1.0 --dispatch pull --combine push --minibatch 4096 --comm-sms 32 \
  --out $R/phases.jsonl > $R/phases.log 2>&1
echo "phases rc $? $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
cat $R/gpu.txt; tail -n 12 $R/gluon_bf16.log | cut -c1-400; tail -n 12 $R/phases.log | cut -c1-250
