#!/bin/bash
# Session 26, second device call (nvidia-h200): where the Gluon FP8 MoK pass's time goes
# (benchmarks/gluon_fp8_mok.py, kimi-k2 / glm-5 EP 8, 4,096 tokens, uniform, rank 0). The
# compute-only diagnostic fixed (its preset counter was a host copy inside graph capture); the
# schedule and the epilogue timed alone; comm programs alone at 32 / 16 and with two blocks in
# flight; compute alone on all 132 programs and on the 100 left by 32 comm programs; the
# join + ys form at 16 / 24 / 32 comm programs. Checks first (default and join+ys paths).
export PYTHONPATH=.
R=$OUT/s26b; mkdir -p $R
{ nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader; date -u; } > $R/gpu.txt 2>&1
V=default,mode=comm,mode=comm+comm=16,mode=comm+cu2,mode=compute+comm=0+join=0,mode=compute
V=$V,join=350+ys,comm=16+join=350+ys,comm=24+join=350+ys,comm=16+join=500+ys,comm=24+join=200+ys
timeout 300 python3 benchmarks/gluon_fp8_mok.py --iters 20 --warmup 5 --baseline \
  --variants $V > $R/mok.log 2>&1
echo "exit $?" >> $R/mok.log
date -u >> $R/gpu.txt
cat $R/gpu.txt
grep -E "FAIL|check " $R/mok.log | cut -c1-160
grep -vE "^check " $R/mok.log | tail -n 40
