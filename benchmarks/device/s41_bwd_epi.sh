#!/bin/bash
# Prepared in session 40 (nvidia-h200, <= 300 s): the training backward's A-item epilogue chunk
# (BackwardTiles.a_epi) again. Compiled on the CPU box (benchmarks/cpu/compile_megakernel.py
# --pass bwd --hidden 7168 --width 2048), the training tiles (a_epi 128) spill ~1.7 KB a thread
# at 255 registers (session 32's "430" was Triton's n_spills, bytes / 4) and a_epi 32 none;
# session 32 timed a_epi 128 fastest (kimi-k2 4,096: -3.9% against -2.1% for 32). Time them again, each beside
# the GEMMs alone (benchmarks/device/s32_bwd_probe.py prints the GPU's own register / spill
# counts too); change TRAINING_TILES only if a variant is faster on both models and sizes, then
# run tests/test_backward_gpu.py's a_epi and saved-g/u tests on it.
export PYTHONPATH=.
R=$OUT/s41e; mkdir -p $R
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo "not an H200"; exit 0; }
T="saved_gu=1,bn_a=256,bn_x=256,w_direct=1,w_bf16=1"
V="$T,a_epi=128;$T,a_epi=64;$T,a_epi=32;$T,a_epi=128"
for M in kimi-k2 glm-5; do for N in 4096 1024; do
  timeout 70 python3 benchmarks/device/s32_bwd_probe.py $M $N "$V" 2>&1 | tee $R/probe_${M}_$N.log
done; done
