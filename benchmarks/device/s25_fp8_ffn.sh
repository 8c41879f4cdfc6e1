#!/bin/bash
# Session 25 (run: one H200, 2026-12-02, 30 s; logs mok_kernels/logs_s25/fp8_ffn/). The routed expert FFN in FP8 on the Gluon core
# (benchmarks/gluon_fp8_gemm.py --ffn): the megakernel's Triton FP8 path runs at 0.86x its BF16
# path, while the Gluon grouped ws2d1 GEMM ran 1.48-1.92x torch._grouped_mm BF16 at kimi-k2 /
# glm-5 expert shapes (s25_fp8_grouped.sh); the next step is the whole FFN on that core, with
# the SwiGLU and h's FP8 quantization fused into the gate/up epilogue. Two launches:
# fp8_ffn_gate_up_kernel (the grouped work list; an item = <= 128 rows of one expert x one
# 128-column block of h, whose gate and up weight blocks come as one 256 x 128 TMA box, W_gu^T
# packed as the megakernel packs it; each math warpgroup's 64 rows take the gate half then the up
# half through one MMA result; epilogue h = silu(g) u in float32, quantized per row per 128
# columns by mok_kernels/fp8.py's rule in registers, q e4m3 and scales stored masked to the
# tile's rows), then fp8_grouped_ws2d1_kernel on q by W_d^T -> y bf16. Cases: kimi-k2 (H 7168,
# I 2048, 48 local experts) and glm-5 (6144, 2048, 32), 32,768 rows a rank by a seeded
# multinomial, and kimi-k2 with zipf-like counts (experts of 0, 1, 37, 64, 65, 128, 129 rows).
# Each case checked first (outputs pre-filled with NaN; a build that also stores h, then the
# timed build, q / scales / y bitwise alike; q and scales bitwise torch's quantize_rows of the
# kernel's own h; every row written, none past the end; per expert h within 2e-3 and y within
# 1e-2 of the float32 reference of the same FP8 pipeline, q unlike torch's quantization of the
# reference h in < 2% of elements, the fraction printed; exit 1 on any failure, the case then
# not timed), then timed (CUDA events, median) beside torch's BF16 FFN: _grouped_mm gate|up,
# silu x mul, _grouped_mm down; the two FP8 kernels also alone. sm_90 compile on the CPU
# (Triton 3.6): gate/up kernel 168 registers at launch, setmaxnreg 240 / 240 / 24, 0 spills,
# 213,064 bytes of shared memory, no ptxas note; then the compile figures on the device's build.
export PYTHONPATH=.
R=$OUT/s25n; mkdir -p $R
{ nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader; date -u; } > $R/gpu.txt 2>&1
timeout 200 python3 benchmarks/gluon_fp8_gemm.py --ffn --out $R/ffn.json > $R/ffn.log 2>&1
echo "exit $?" >> $R/ffn.log
timeout 40 python3 benchmarks/gluon_fp8_gemm.py --compile-only --variants ws2d1 \
  >> $R/ffn.log 2>&1
date -u >> $R/gpu.txt
cat $R/gpu.txt
tail -n 40 $R/ffn.log
