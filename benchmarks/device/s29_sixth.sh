#!/bin/bash
# Session 29, last device call (nvidia-h200, <= 170 s): a first probe of the W items' pipeline
# with the training tiles + w_direct / w_bf16 (kimi-k2 / glm-5 EP 8 rank 0, 4,096 tokens):
# bk_rows 32 (more steps, smaller), num_stages 4 and 2, beside the set itself, in one run.
export PYTHONPATH=.
T0=$(date +%s); R=$OUT/s29f; mkdir -p $R
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo "not an H200"; nvidia-smi -L; exit 0; }
T="saved_gu=1,bn_a=128,bn_x=256,w_direct=1,w_bf16=1"
timeout 160 python3 -m mok_kernels.bench --pass bwd --model kimi-k2,glm-5 --ep 8 --rank 0 \
  --tokens 4096 --routing uniform --minibatch 4096 --comm-sms 32 --capacity 1.0 --systems mok \
  --bwd-tiles "$T;$T,bk_rows=32;$T,num_stages=4;$T,num_stages=2" \
  --out $R/bwd_probe.jsonl > $R/bwd_probe.log 2>&1
echo "exit $? $(( $(date +%s) - T0 )) s" >> $R/bwd_probe.log
tail -n 12 $R/bwd_probe.log | cut -c1-220
