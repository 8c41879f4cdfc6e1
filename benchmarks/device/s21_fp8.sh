#!/bin/bash
# Prepared in session 20 (2026-12-02) for a next session with an nvidia-h200 (<= 300 s): the Gluon
# FP8 block-scaled GEMM prototype (benchmarks/gluon_fp8_gemm.py, compiled for sm_90 on the CPU
# box only: 215 registers and no spills with two accumulators in turn, but ptxas note C7514 says
# it serializes the wgmmas; 148 registers waiting for each block; 168 with a one-warp TMA
# partition) checked against the float32
# product of its dequantized operands, then timed beside torch BF16 and torch._scaled_mm with
# the same block scales at kimi-k2 and qwen3-30b shapes, 4,096 and 16,384 rows.
export PYTHONPATH=.
R=$OUT/s21f; mkdir -p $R
{ nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader; date -u; } > $R/gpu.txt 2>&1
timeout 280 python3 benchmarks/gluon_fp8_gemm.py --rows 4096,16384 --out $R/gluon_fp8.json > $R/gluon_fp8.log 2>&1
date -u >> $R/gpu.txt
