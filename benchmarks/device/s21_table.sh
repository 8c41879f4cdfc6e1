#!/bin/bash
# Session 21 (2026-12-02), nvidia-h200, <= 300 s. Two checks, neither a registered test:
# 1. mixtral-8x7b's GEMM phases alone (mok-gemm) at EP 8 between the GEMM table's points:
#    384-1024 tokens uniform (768-2048 rows on rank 0's one expert) and 1024 zipf:1.2, the point
#    whose 891 rows cost 27% over the phase mechanism (docs/calibration.md, Session 21); twice.
# 2. glm-5 EP 32 at 64 tokens: the automatic pick (minibatch 1024, 28 comm SMs) against the best
#    swept settings of s21_decode / s21_decode2 (minibatch 256, 16 / 64 comm SMs), three times,
#    interleaved (their predictions: calibration/predictions/h200_auto_decode*_2026-12-02.jsonl).
export PYTHONPATH=.
R=$OUT/s21t; mkdir -p $R
{ nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader; date -u; } > $R/gpu.txt 2>&1
M="python3 -m mok_kernels.bench --rank 0 --systems mok-gemm,gemm-only --model mixtral-8x7b --ep 8 --capacity 1.0 --dispatch pull --combine push --minibatch 2048 --comm-sms 64"
for rep in 1 2; do
  timeout 90 $M --tokens 384,512,640,768,1024 --routing uniform --out $R/mixtral_gemm.jsonl >> $R/mixtral_gemm.log 2>&1
  timeout 60 $M --tokens 1024 --routing zipf:1.2 --out $R/mixtral_gemm.jsonl >> $R/mixtral_gemm.log 2>&1
  echo "mixtral rep $rep $(date -u +%T)" >> $R/gpu.txt
done
B="python3 -m mok_kernels.bench --rank 0 --routing uniform --systems mok --capacity 1.0 --model glm-5 --ep 32 --tokens 64 --dispatch pull --combine push --minibatch 256,1024 --comm-sms 16,64 --auto"
timeout 90 $B --iters 1 --warmup 0 --out /tmp/w.jsonl > /dev/null 2>&1
for rep in 1 2 3; do
  timeout 40 $B --out $R/glm5_repeat.jsonl >> $R/glm5_repeat.log 2>&1
  echo "glm-5 rep $rep $(date -u +%T)" >> $R/gpu.txt
done
