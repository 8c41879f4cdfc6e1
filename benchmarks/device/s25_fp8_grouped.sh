#!/bin/bash
# Session 25 (run inside s25_group.sh, one H200, 2026-12-02, 26 s; logs mok_kernels/logs_s25/fp8_grouped/). The Gluon FP8 block-scaled GEMM's ws2d1 form (1.49-1.72x
# torch BF16 at dense kimi-k2 shapes and 16,384 qwen3-30b rows, 0.65x at 4,096 qwen3-30b rows;
# benchmarks/device/s25_fp8.sh) as the
# megakernel's real workload: ONE grouped GEMM over a rank's ragged experts
# (fp8_grouped_ws2d1_kernel in benchmarks/gluon_fp8_gemm.py, --grouped). Does a Gluon core keep
# its speed there (the megakernel's Triton FP8 path runs 0.86x its BF16 path)? A work list of
# tiles of at most 128 rows of one expert x 128-column blocks, walked by one persistent program
# an SM (the load warp and both math warpgroups in the same order); A by TMA from the tile's
# first row, B^T from row expert x N of an (E x N, K) view; only the tile's own rows stored
# (shared memory, then a store masked by row: never the next expert's rows). Cases: kimi-k2
# gate|up (N 4096, K 7168) and down (7168, 2048), 48 local experts (EP 8 of 384); glm-5 gate|up
# (4096, 6144) and down (6144, 2048), 32 local experts (EP 8 of 256); 32,768 rows a rank
# (4,096 tokens x top-8 x 8 ranks / EP 8) by a seeded multinomial, and kimi-k2 down with
# zipf-like counts (experts of 0, 1, 37, 64, 65, 128, 129 rows among them). Each case checked
# first (C pre-filled with NaN: every row written, each expert within 1e-2 of the float32
# product of its dequantized operands, no row past the end written; reruns with the even, then
# the odd, experts' tiles alone leave every other row NaN and theirs bitwise the same; exit 1
# on any failure, the case then not timed), then timed beside torch._grouped_mm BF16 on the
# same ragged rows (B (E, K, N) as mok_kernels/bench.py run_gemm_only has it, and B K-major).
# sm_90 compile on the CPU (Triton 3.6): grouped kernel setmaxnreg 240 / 240 / 24 (168 at
# launch), 0 spills, 229,480 bytes of shared memory, no ptxas note; then the compile figures
# on the device's build.
export PYTHONPATH=.
R=$OUT/s25g; mkdir -p $R
{ nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader; date -u; } > $R/gpu.txt 2>&1
timeout 200 python3 benchmarks/gluon_fp8_gemm.py --grouped --out $R/grouped.json \
  > $R/grouped.log 2>&1
echo "exit $?" >> $R/grouped.log
timeout 40 python3 benchmarks/gluon_fp8_gemm.py --compile-only --variants ws2d1 \
  >> $R/grouped.log 2>&1
date -u >> $R/gpu.txt
cat $R/gpu.txt
tail -n 40 $R/grouped.log
