#!/bin/bash
# Session 32, call 3: a_epi 128 / 32 at bn_a 256 against the training tiles on kimi-k2 and
# glm-5, 1,024 and 4,096 tokens (each in one run beside the GEMMs alone). nvidia-h200.
export PYTHONPATH=.
R=$OUT/s32f; mkdir -p $R
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo "not an H200"; exit 0; }
T="saved_gu=1,bn_a=128,bn_x=256,w_direct=1,w_bf16=1"
V="$T;$T,bn_a=256,a_epi=128;$T,bn_a=256,a_epi=32;$T,bn_a=256,a_epi=128,num_stages=4"
for M in kimi-k2 glm-5; do for N in 4096 1024; do
  timeout 130 python3 benchmarks/device/s32_bwd_probe.py $M $N "$V" 2>&1 | tee $R/probe_${M}_$N.log
done; done
