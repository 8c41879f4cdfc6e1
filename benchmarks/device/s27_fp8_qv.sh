#!/bin/bash
# Prepared in session 26, NOT RUN: the Gluon FP8 pass's comm copies with their two correctly
# rounded divisions done once a row (qv1: _quant_block; 20 div.rn.f32 in the sm_90 PTX against
# 80; the qv0 build's PTX unchanged by the edit). Checks first (qv1 alone and with cu2, every
# rank at the reduced and the 4,096-token shapes, bitwise the default's output), then comm
# programs alone (mode=comm) and the pass, qv0 against qv1, beside the BF16 megakernel
# (kimi-k2 / glm-5 EP 8, 4,096 tokens). If qv1 is bitwise the default and faster, make it the
# default (GluonFP8MoK qv) and re-run tests/test_gluon_fp8_gpu.py.
export PYTHONPATH=.
R=$OUT/s27qv; mkdir -p $R
{ nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader; date -u; } > $R/gpu.txt 2>&1
V=default,qv1,cu2+qv1,mode=comm,mode=comm+qv1,mode=comm+cu2+qv1,mode=comm+comm=16,mode=comm+comm=16+qv1
timeout 400 python3 benchmarks/gluon_fp8_mok.py --iters 20 --warmup 5 --baseline \
  --variants $V > $R/mok.log 2>&1
echo "exit $?" >> $R/mok.log
date -u >> $R/gpu.txt; cat $R/gpu.txt
grep -E "FAIL|check " $R/mok.log | sed -E 's/ \(H [^)]*\)//' | cut -c1-190
grep -vE "^check " $R/mok.log | tail -n 30
