#!/bin/bash
# Session 27, eighth device call (nvidia-h200, <= 150 s): the join point at the new default of
# 40 comm programs (join 350 was chosen at 24): kimi-k2 / glm-5 EP 8, 4,096 tokens, beside the
# BF16 megakernel; join 250 / 350 / 450 / 600.
export PYTHONPATH=.
R=$OUT/s27h; mkdir -p $R
{ nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader; date -u; } > $R/gpu.txt 2>&1
timeout 140 python3 benchmarks/gluon_fp8_mok.py --iters 20 --warmup 5 --baseline \
  --checks kimi-k2-widths --check-variants default \
  --variants default,join=250,join=450,join=600 > $R/mok.log 2>&1
echo "exit $?" >> $R/mok.log; date -u >> $R/gpu.txt
grep -vE "^check " $R/mok.log | tail -n 14; cat $R/gpu.txt
