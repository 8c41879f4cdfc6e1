#!/bin/bash
# Session 32, call 2: the A items as one dot of N = bn_a (up to 256) with the SwiGLU-backward
# epilogue in chunks through a per-program fp32 scratch (BackwardTiles.a_epi): GPU tests, then
# registers / spills / time against the training tiles in the same run. nvidia-h200.
export PYTHONPATH=.
R=$OUT/s32e; mkdir -p $R
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo "not an H200"; exit 0; }
timeout 200 python3 -m pytest -q -p no:cacheprovider tests/test_backward_gpu.py -k "a_epi" 2>&1 | tail -15 | tee $R/tests.log
T="saved_gu=1,bn_a=128,bn_x=256,w_direct=1,w_bf16=1"
E="$T,bn_a=256,a_epi=64"
timeout 170 python3 benchmarks/device/s32_bwd_probe.py kimi-k2 4096 "$T;$E;$T,bn_a=256,a_epi=32;$T,bn_a=256,a_epi=128;$T,a_epi=64;$E,diag=3" 2>&1 | tee $R/probe_kimi.log
timeout 100 python3 benchmarks/device/s32_bwd_probe.py glm-5 4096 "$T;$E" 2>&1 | tee $R/probe_glm.log
timeout 80 python3 benchmarks/device/s32_bwd_probe.py kimi-k2 1024 "$T;$E" 2>&1 | tee $R/probe_kimi1k.log
