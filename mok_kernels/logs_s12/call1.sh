#!/bin/bash
# session 12 call 1: fp8 variants, backward tile options, their tests
export PYTHONPATH=.
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader > $OUT/gpu.txt
date -u >> $OUT/gpu.txt
git log -1 --format=%H >> $OUT/gpu.txt 2>/dev/null
timeout 210 python3 -m mok_kernels.bench --model kimi-k2,glm-5 --ep 8 --rank 0 --tokens 4096 \
  --precision bf16,fp8 --fp8-kernel v1,v1-bm64,v2,v2-bm64 --systems mok,gemm-only \
  --dispatch pull --combine push --minibatch 4096 --comm-sms 32 --capacity 1.0 --routing uniform \
  --out $OUT/fp8_variants.jsonl > $OUT/fp8_variants.log 2>&1; echo "fp8 rc $?" >> $OUT/fp8_variants.log
timeout 170 python3 -m mok_kernels.bench --pass bwd --model kimi-k2,glm-5 --ep 8 --rank 0 --tokens 4096 \
  --routing uniform --minibatch 4096 --comm-sms 32 --capacity 1.0 --breakdown \
  --bwd-tiles "default;w_flat=1;w_flat=1,a_fuse_gu=1;w_flat=1,a_fuse_gu=1,bw=256" \
  --out $OUT/bwd_tiles.jsonl > $OUT/bwd_tiles.log 2>&1; echo "bwd rc $?" >> $OUT/bwd_tiles.log
timeout 190 python3 -m pytest -q -rA tests/test_backward_gpu.py -k "performance_options or diagnostics" \
  > $OUT/bwd_opt_tests.log 2>&1; echo "tests rc $?" >> $OUT/bwd_opt_tests.log
