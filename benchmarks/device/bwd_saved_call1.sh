#!/bin/bash
# Backward with g/u saved by the forward (issue 14), device call 1 of 2 (kind nvidia-h200, <= 9.5 min; run with timeout_s 600):
# GPU tests of the new path and of the forward it touches, and a compile warm-up of call 2's
# variants (untimed; every process in parallel). Run: bash benchmarks/device/bwd_saved_call1.sh
export PYTHONPATH=.
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader > $OUT/gpu.txt
date -u >> $OUT/gpu.txt; git log -1 --format=%H >> $OUT/gpu.txt 2>/dev/null
timeout 540 python3 -m pytest -q -rA tests/test_backward_gpu.py -k saved > $OUT/t_bwd_saved.log 2>&1 &
timeout 540 python3 -m pytest -q -rA tests/test_autograd_gpu.py > $OUT/t_autograd.log 2>&1 &
timeout 540 python3 -m pytest -q -rA tests/test_backward_gpu.py -k "not saved" > $OUT/t_bwd.log 2>&1 &
timeout 540 python3 -m pytest -q tests/test_kernels_gpu.py > $OUT/t_kernels.log 2>&1 &
for m in kimi-k2 glm-5; do
  # call 2's tile sets and diagnostics, a few per process (compiles are per shape, not per token count)
  S=saved_gu=1,bn_a=128,bn_x=256
  for t in "default;bn_x=256;diag=1" "saved_gu=1;diag=2;diag=3" "saved_gu=1,bn_a=128;$S,diag=1" \
           "$S;$S,diag=2;$S,diag=3"; do
    timeout 420 python3 -m mok_kernels.bench --pass bwd --model $m --ep 8 --rank 0 --tokens 1024 \
      --routing uniform --minibatch 4096 --comm-sms 32 --capacity 1.0 --systems mok --iters 1 \
      --warmup 1 --bwd-tiles "$t" --out $OUT/warmup.jsonl >> $OUT/warmup.log 2>&1 &
  done
done
wait; echo done >> $OUT/gpu.txt
