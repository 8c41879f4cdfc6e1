#!/bin/bash
# Session 20 (2026-12-02), nvidia-h200, <= 420 s: where the narrow-expert passes' time goes at
# their best lag (benchmarks/narrow_diag.py: the library's GEMMs, the megakernel's GEMM phases
# alone, MoK with and without its copies and with comm SMs that never join, each with its eager
# schedule / megakernel / epilogue split), lag 4 at minibatch 1024, 32 and 64 comm SMs, on the
# four slowest workloads of this session's sweeps. Diagnostic: a log, no run records.
export PYTHONPATH=.
R=$OUT/s20n; mkdir -p $R
{ nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader; date -u; } > $R/gpu.txt 2>&1
D=calibration/drawn_shapes
timeout 400 python3 benchmarks/narrow_diag.py --workloads \
  $D/seed2/syn2-h7936-i256-e64-k6-s1.toml:8:1024,$D/seed3/syn3-h1792-i320-e64-k4-s1.toml:16:4096,qwen3-30b-a3b:8:4096,$D/seed4/syn4-h2560-i448-e32-k6.toml:8:1792 \
  --comm-sms 32,64 --minibatch 1024 --list-lag 4 > $R/narrow_diag_lag4.log 2>&1
date -u >> $R/gpu.txt
