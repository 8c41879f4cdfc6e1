#!/bin/bash
# Session 25, fourth device call (nvidia-h200, 17 s; logs mok_kernels/logs_s25/fp8/). The Gluon FP8 block-scaled
# GEMM's new K-loop form "ws2d1" (benchmarks/gluon_fp8_gemm.py) beside ws2p: ws2d (two MMAs in
# flight per math warpgroup, block k+1's issued before block k's is waited for and scaled) fed
# by ws2p's one-warp load partition, so neither math warpgroup waits on a ring buffer's release
# before its own next MMA (ws2d's first warpgroup loaded the ring itself and ran 0.96-1.01x
# BF16, ws2p 1.23-1.58x; ws2p with its scale step removed ran 1.66-1.89x). sm_90 compile on the
# CPU (Triton 3.6): setmaxnreg 240 / 240 / 24 (math, math, load warpgroup; 168 at launch), 0
# spills, 229,480 bytes of shared memory (6-stage ring), no ptxas note. Each form checked
# against the float32 product of its dequantized operands, then timed beside torch BF16 and
# torch._scaled_mm with the same block scales (the tool always times both) at kimi-k2 and
# qwen3-30b shapes, 4,096 and 16,384 rows; then the sm_90 compile figures on the device's build.
export PYTHONPATH=.
R=$OUT/s25f; mkdir -p $R
{ nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader; date -u; } > $R/gpu.txt 2>&1
timeout 200 python3 benchmarks/gluon_fp8_gemm.py --rows 4096,16384 --variants ws2p,ws2d1 \
  --out $R/gluon_fp8.json > $R/gluon_fp8.log 2>&1
echo "exit $?" >> $R/gluon_fp8.log
timeout 25 python3 benchmarks/gluon_fp8_gemm.py --compile-only --variants ws2p,ws2d1 \
  >> $R/gluon_fp8.log 2>&1
date -u >> $R/gpu.txt
cat $R/gpu.txt
tail -n 40 $R/gluon_fp8.log
