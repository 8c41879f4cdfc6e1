#!/bin/bash
# Session 60 (either card, <= 300 s): the narrow experts' gap taken apart on one card, with the
# Gluon BF16 core beside it. 1. benchmarks/gluon_bf16_grouped.py (every form, every case);
# 2. benchmarks/narrow_diag.py: library GEMMs, the megakernel's own GEMM phases, the pass with
# and without its copies, and the epilogue (qwen3-30b / qwen3-next / kimi-k2, EP 8);
# 3. mok bench: MoK (pull / push, minibatch 2048 / 4096, 16 / 32 comm SMs), mok-gemm and
# gemm-only on the same four presets at EP 8 x 1,024 / 4,096. Everything lands in $OUT/s60d.tgz.
export PYTHONPATH=.
T0=$(date +%s); FINAL=$OUT; export OUT=/tmp/s60d; R=$OUT/s60d; mkdir -p $R
trap 'tar -czf $FINAL/s60d.tgz -C $OUT .' EXIT
{ nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader; date -u; git log -1 --format=%H; } > $R/gpu.txt
timeout 120 python3 benchmarks/gluon_bf16_grouped.py --out $R/gluon_bf16.json > $R/gluon_bf16.log 2>&1
echo "gluon bf16 rc $? $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
timeout 90 python3 benchmarks/narrow_diag.py --workloads \
  qwen3-30b-a3b:8:4096,qwen3-next-80b-a3b:8:4096,qwen3-30b-a3b:8:1024,kimi-k2:8:4096 \
  --comm-sms 32 --minibatch 4096 > $R/narrow_diag.log 2>&1
echo "narrow diag rc $? $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
L=$(( ${LIMIT:-290} - ($(date +%s) - T0) ))
timeout $L python3 -m mok_kernels.bench --rank 0 --systems mok,mok-gemm,gemm-only \
  --model qwen3-30b-a3b,qwen3-next-80b-a3b,kimi-k2,glm-5 --ep 8 --tokens 1024,4096 \
  --routing uniform --capacity 1.0 --dispatch pull --combine push --minibatch 2048,4096 \
  --comm-sms 16,32 --out $R/narrow.jsonl > $R/narrow.log 2>&1
echo "bench rc $? $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
cat $R/gpu.txt; cat $R/gluon_bf16.log | cut -c1-400; cat $R/narrow_diag.log
