#!/bin/bash
# Session 26, third device call (nvidia-h200): the Gluon FP8 MoK pass with every program
# quantizing a share of the home tokens first (knob `home`: the first items wait for those rows,
# which 32 comm programs alone land after about 0.15 ms), checked first at the reduced shapes
# and, new, at the timed token count (4,096 tokens a rank, minibatch 4,096, 64 experts) for
# every code path timed; then timed beside the Triton BF16 megakernel (kimi-k2 / glm-5 EP 8,
# 4,096 tokens, uniform, rank 0), with compute alone on all 132 programs.
export PYTHONPATH=.
R=$OUT/s26c; mkdir -p $R
{ nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader; date -u; } > $R/gpu.txt 2>&1
V=default,home,join=350,mode=compute+comm=0+join=0,join=350+ys,join=350+ys+home
V=$V,join=350+ys+home+cu2,comm=24+join=350+ys+home,join=250+ys+home,join=450+ys+home
timeout 450 python3 benchmarks/gluon_fp8_mok.py --iters 20 --warmup 5 --baseline \
  --variants $V > $R/mok.log 2>&1
echo "exit $?" >> $R/mok.log
date -u >> $R/gpu.txt
cat $R/gpu.txt
grep -E "FAIL|check " $R/mok.log | sed -E 's/ \(H [^)]*\)//' | cut -c1-190
grep -vE "^check " $R/mok.log | tail -n 40
