#!/bin/bash
# Session 13, device call 2 (same warm machine right after call 1; <= 570 s; timeout_s 600).
# Timed, one job at a time: the space sweep's last workloads, backward with g/u saved by the
# forward (and the forward's cost of saving them), FP8 v2-v5 beside BF16 in one run, then the
# GEMM phases call 1 did not reach (resumed from /tmp/s13).
export PYTHONPATH=.
T0=$(date +%s); S=/tmp/s13; mkdir -p $S
{ date -u; git log -1 --format=%H; ls -la $S; } > $OUT/gpu.txt 2>&1
timeout 110 python3 -m mok_kernels.space_sweep --skip-done calibration/runs/h200_space/space.jsonl \
  --out $OUT/space_rest.jsonl --deadline-s 90 > $OUT/space_rest.log 2>&1
echo "space rest $(( $(date +%s) - T0 )) s" >> $OUT/gpu.txt
timeout 150 python3 -m mok_kernels.bench --pass bwd --model kimi-k2,glm-5 --ep 8 --rank 0 \
  --tokens 1024,2048,4096 --routing uniform --minibatch 4096 --comm-sms 32 --capacity 1.0 \
  --bwd-tiles "default;saved_gu=1;saved_gu=1,bn_a=128;saved_gu=1,bn_a=128,bn_x=256;bn_x=256" \
  --out $OUT/bwd_saved.jsonl > $OUT/bwd_saved.log 2>&1; echo "rc $?" >> $OUT/bwd_saved.log
echo "bwd saved $(( $(date +%s) - T0 )) s" >> $OUT/gpu.txt
timeout 80 python3 benchmarks/bwd_saved_fwd_cost.py --model kimi-k2,glm-5 --tokens 1024,4096 \
  > $OUT/fwd_save_cost.log 2>&1; echo "rc $?" >> $OUT/fwd_save_cost.log
echo "fwd save cost $(( $(date +%s) - T0 )) s" >> $OUT/gpu.txt
timeout 100 python3 -m mok_kernels.bench --model kimi-k2,glm-5 --ep 8 --rank 0 --tokens 4096 \
  --routing uniform --precision bf16,fp8 --fp8-kernel v2-bm64,v3-bm64,v4-bm64,v5-bm64 --systems mok \
  --minibatch 4096 --comm-sms 32 --capacity 1.0 --out $OUT/fp8_variants.jsonl > $OUT/fp8_variants.log 2>&1
echo "fp8 variants $(( $(date +%s) - T0 )) s rc $?" >> $OUT/gpu.txt
REM=$(( 565 - ($(date +%s) - T0) ))
if [ $REM -gt 40 ]; then
  timeout $REM python3 -m mok_kernels.space_sweep --gemm-phases --skip-done $S/gemm.jsonl \
    --out $S/gemm2.jsonl --deadline-s $(( REM - 20 )) > $OUT/gemm2.log 2>&1
  cp $S/gemm2.jsonl $OUT/gemm2.jsonl
fi
echo "end $(( $(date +%s) - T0 )) s" >> $OUT/gpu.txt
