#!/bin/bash
# Prepared for a session with an nvidia-h200 (<= 300 s): the Gluon FP8 block-scaled GEMM
# (benchmarks/gluon_fp8_gemm.py), every K-loop form, with the new one "ws2pp": CUTLASS's
# ping-pong schedule (each math warpgroup on whole 64 x 128 tiles of its own, the two taking
# turns on the tensor cores a tile's K loop at a time, one's store under the other's MMAs;
# sm_90 compile: 0 spills at 168 registers, 229,528 bytes of shared memory with an 8-stage
# ring, no ptxas note). Each form checked against the float32 product of its dequantized
# operands, then timed beside torch BF16 and torch._scaled_mm with the same block scales at
# kimi-k2 and qwen3-30b shapes, 4,096 and 16,384 rows. (A run of wait, ws2p and ws2pp alone,
# --variants wait,ws2p,ws2pp, took 10 s on one H200; all eight forms stay well under 280 s.)
export PYTHONPATH=.
R=$OUT/s24f; mkdir -p $R
{ nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader; date -u; } > $R/gpu.txt 2>&1
timeout 280 python3 benchmarks/gluon_fp8_gemm.py --rows 4096,16384 --out $R/gluon_fp8.json > $R/gluon_fp8.log 2>&1
date -u >> $R/gpu.txt
