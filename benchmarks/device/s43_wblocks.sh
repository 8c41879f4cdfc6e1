#!/bin/bash
# Prepared in session 42 (nvidia-h200, <= 400 s), not yet run: the backward's W items walking
# several weight tiles in one flattened loop (BackwardTiles.w_blocks; the forward's dn_blocks
# idea: a W item's row loop is short where an expert has few rows, e.g. kimi-k2 EP 8 4,096: ~680
# rows, 11 steps of 64). Compiled on the CPU box (benchmarks/cpu/compile_megakernel.py --pass bwd
# --tiles "...,w_blocks=2"): the default tiles' PTX digests unchanged; with w_blocks the
# training tiles spill ~400 more bytes a thread (2.1 KB) and the recomputing ones ~0.5 KB (none
# before). First the bits / float32 test (tests/test_backward_gpu.py
# ::test_w_blocks_are_the_bits_of_one_tile_an_item), then each variant beside the GEMMs alone
# (benchmarks/device/s32_bwd_probe.py). Change TRAINING_TILES only if faster on both models and
# sizes, and name w_blocks in the model (records.DEFAULT_BWD has it: another variant until then).
# Session 43 call 1: with three pipeline stages a flattened loop asks 272 KiB of shared memory
# (OutOfResources); the variants run with two, beside the plain tiles at two.
export PYTHONPATH=.
R=$OUT/s43w; mkdir -p $R; LIMIT=${LIMIT:-390}; source benchmarks/device/pytest_steps.sh
[ -z "$SKIP_WB_TEST" ] && step wb tests/test_backward_gpu.py -k "w_blocks"
T="saved_gu=1,bn_a=256,bn_x=256,w_direct=1,w_bf16=1,a_epi=128"
V="$T;$T,num_stages=2;$T,w_blocks=2,num_stages=2;$T,w_blocks=4,num_stages=2;$T"
for M in kimi-k2 glm-5; do for N in 4096 1024; do
  timeout 60 python3 benchmarks/device/s32_bwd_probe.py $M $N "$V" 2>&1 | tee $R/probe_${M}_$N.log
done; done
tar -czf $OUT/s43w.tgz -C $OUT s43w
cat $R/summary.log
