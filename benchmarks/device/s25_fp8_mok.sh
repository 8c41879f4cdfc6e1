#!/bin/bash
# Session 25 (run: one H200, 2026-12-02, 72 s, at commit e4c7353, whose gluon_fp8_mok.py also
# timed the Triton FP8 path; logs mok_kernels/logs_s25/fp8_mok/). Run again, today's file times
# the BF16 baseline (--baseline) and not the FP8 one. A prototype FP8 MoK forward pass as ONE
# persistent Gluon kernel (benchmarks/gluon_fp8_mok.py) plus the megakernel's epilogue, one emulated rank: comm
# programs quantize the home tokens and the routed rows (pull dispatch, 1 x 128 e4m3 by fp8.py's
# rule) into the ring minibatch by minibatch and release-add landed-row counters; compute programs
# walk one globally ordered item list (shared gate/up, then per minibatch gate/up then down, then
# shared down) on the --ffn gate/up and ws2d1 down K loops, the load warp acquire-waiting
# (bounded) before each item's TMA loads; down rows scattered to the combine slots (push).
# Check first (exit 1, not timed, on failure): all 8 ranks emulated in turn at kimi-k2 and glm-5
# widths (16 experts, 256 / 192 tokens a rank, uniform / zipf routing, several minibatches): every
# combine slot written, the full home output of every token within 2e-2 of
# reference.moe_reference(fp8=True) and within fp8.FP8_REL_TOL (0.08) of the float32 one, no wait
# timed out, rank 0's pass bitwise the same over 3 repeats. Then rank 0's pass (schedule + kernel
# + epilogue, graph replay, CUDA events, median) beside the Triton megakernel's BF16 and FP8
# paths (pull/push, minibatch 4096, 32 comm SMs, capacity 1.0) at kimi-k2 and glm-5 EP 8, 4,096
# tokens, uniform routing. sm_90 compile on the CPU (Triton 3.6): 168 registers at launch,
# setmaxnreg 240 / 240 / 24 (plus 120 / 256 in the workers' idle loop), 56 / 128 bytes of spill
# stores / loads, 196,984 bytes of shared memory, no ptxas note.
export PYTHONPATH=.
R=$OUT/s25m; mkdir -p $R
{ nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader; date -u; } > $R/gpu.txt 2>&1
timeout 400 python3 benchmarks/gluon_fp8_mok.py --iters 20 --warmup 5 > $R/mok.log 2>&1
echo "exit $?" >> $R/mok.log
timeout 60 python3 benchmarks/gluon_fp8_mok.py --compile-only >> $R/mok.log 2>&1
date -u >> $R/gpu.txt
cat $R/gpu.txt
tail -n 40 $R/mok.log
