#!/bin/bash
# Backward with g/u saved by the forward (issue 14), device call 2 of 2 (same warm machine right
# after call 1, so the Triton cache holds the variants; <= 9 min; run with timeout_s 600): timed, one at a time.
# Run: bash benchmarks/device/bwd_saved_call2.sh
export PYTHONPATH=.
timeout 280 python3 -m mok_kernels.bench --pass bwd --model kimi-k2,glm-5 --ep 8 --rank 0 \
  --tokens 1024,2048,4096 --routing uniform,zipf:1.2,hot:0.1 --minibatch 4096 --comm-sms 32 \
  --capacity 1.0 --bwd-tiles "default;saved_gu=1;saved_gu=1,bn_a=128;saved_gu=1,bn_a=128,bn_x=256;bn_x=256" \
  --out $OUT/bwd_saved.jsonl > $OUT/bwd_saved.log 2>&1; echo "rc $?" >> $OUT/bwd_saved.log
# where the time goes (diag=1: A+X, 2: A+W, 3: A only; records marked DIAGNOSTIC)
timeout 110 python3 -m mok_kernels.bench --pass bwd --model kimi-k2,glm-5 --ep 8 --rank 0 \
  --tokens 4096 --routing uniform --minibatch 4096 --comm-sms 32 --capacity 1.0 --systems mok \
  --bwd-tiles "diag=1;diag=2;diag=3;saved_gu=1,bn_a=128,bn_x=256,diag=1;saved_gu=1,bn_a=128,bn_x=256,diag=2;saved_gu=1,bn_a=128,bn_x=256,diag=3" \
  --out $OUT/bwd_saved_diag.jsonl > $OUT/bwd_saved_diag.log 2>&1; echo "rc $?" >> $OUT/bwd_saved_diag.log
timeout 100 python3 benchmarks/bwd_saved_fwd_cost.py --model kimi-k2,glm-5 --tokens 1024,4096 \
  > $OUT/fwd_save_cost.log 2>&1; echo "rc $?" >> $OUT/fwd_save_cost.log
# the L2 -> SM read bandwidth the per-item model assumes (about 7 TB/s)
timeout 50 python3 benchmarks/l2_probe.py > $OUT/l2_probe.log 2>&1; echo "rc $?" >> $OUT/l2_probe.log
