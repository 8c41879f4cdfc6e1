#!/bin/bash
# Session 53, third H100 call (<= 420 s): group_m 8 against row tile by row tile (group_m 1) where
# s53_h100_b.sh found the megakernel's GEMM phases alone 1.23-1.53x the library's on an H100: two
# drawn shapes with 27-29 gate/up column blocks (under tiles.WIDE_BLOCKS 32, so not grouped; a
# row tile's gate/up weights about 100 MB, twice the L2), beside kimi-k2 and qwen3-235b-a22b
# (59 / 25 MB) as controls. Uniform routing, pull / push, minibatch 2,048, each output checked.
export PYTHONPATH=.
R=$OUT/s53ab; mkdir -p $R
{ nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader; date -u; } > $R/gpu.txt
W=${W:-calibration/drawn_shapes/seed21/syn21-h6912-i3712-e64-k10-s1.toml:8:6144,calibration/drawn_shapes/seed21/syn21-h7424-i3456-e16-k1-s1.toml:4:4608,kimi-k2:8:4096,qwen3-235b-a22b:8:4096}
timeout $(( ${DEADLINE:-330} + 70 )) python3 -m mok_kernels.tile_sweep --workloads $W --iters 10 --deadline-s ${DEADLINE:-330} \
  --candidates m128-g128-d256-w8-s4,m128-g128-d256-w8-s4-G8 --out $R/group_ab.jsonl > $R/group_ab.log 2>&1
echo "exit $? at $(date -u)" >> $R/gpu.txt
cat $R/gpu.txt; cut -c1-400 $R/group_ab.log
