#!/bin/bash
# Session 31, call 5 (nvidia-h200, <= 150 s): a_wide (A alone 6-15% faster, whole pass +-1%)
# beside the other opt-in W option and a deeper pipeline, whole pass, kimi-k2 / glm-5 EP 8 rank
# 0 at 1,024 / 4,096 tokens, the GEMMs alone in the same run.
export PYTHONPATH=.
# a_wide was in the working tree when this ran; dropped after (no gain on the whole pass:
# mok_kernels/NOTES.md, Session 31): rerun with its patch applied
git apply benchmarks/device/s31_a_wide.patch || exit 1
[ -d s31snap ] && cp -r s31snap/. . && rm -rf s31snap     # HEAD's versions of others' files
R=$OUT/s31c; mkdir -p $R
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo "not an H200"; exit 0; }
T="saved_gu=1,bn_a=128,bn_x=256,w_direct=1,w_bf16=1"
timeout 140 python3 -m mok_kernels.bench --pass bwd --model kimi-k2,glm-5 --ep 8 --rank 0 \
  --tokens 1024,4096 --routing uniform --capacity 1.0 --minibatch 4096 --comm-sms 32 \
  --systems mok,gemm-only --bwd-tiles "$T;$T,a_wide=1,w_tma=1;$T,a_wide=1,num_stages=4;$T,num_stages=4" \
  --out $R/bwd_combo.jsonl > $R/bwd_combo.log 2>&1
echo "bench exit $?"; grep -hE " ms |FAILED|Error" $R/bwd_combo.log | cut -c1-150
