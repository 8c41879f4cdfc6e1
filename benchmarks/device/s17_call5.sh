#!/bin/bash
# Session 17, device call 5 (nvidia-h200, <= 400 s): narrow experts under a wide H across
# minibatch sizes, the failure drawn seeds 2 and 3 show (docs/calibration.md "Drawn shapes"):
# syn3-h7168-i256-e256-k5-s1 at EP 32 (768 and 2560 tokens) and syn2-h7936-i256-e64-k6-s1 at EP 4
# (6144 tokens, zipf), pull and push dispatch, minibatch 512-8192; predictions registered first
# (calibration/predictions/h200_minibatch_narrow_{a,b}_2026-12-01.jsonl). Timed, one at a time.
export PYTHONPATH=.
T0=$(date +%s); R=/tmp/s17/r5; mkdir -p $R
{ nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader; date -u; } > $R/gpu.txt 2>&1
S3=calibration/drawn_shapes/seed3/syn3-h7168-i256-e256-k5-s1.toml
S2=calibration/drawn_shapes/seed2/syn2-h7936-i256-e64-k6-s1.toml
B="python3 -m mok_kernels.bench --rank 0 --combine push --capacity 1.0 --systems mok,gemm-only,mok-gemm"
timeout 180 $B --model $S3 --ep 32 --tokens 768,2560 --routing uniform --dispatch pull,push \
  --minibatch 512,1024,2048,4096 --comm-sms 32,64 --out $R/minibatch_narrow.jsonl > $R/a.log 2>&1
echo "a $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
timeout 170 $B --model $S2 --ep 4 --tokens 6144 --routing zipf:1.2 --dispatch pull,push \
  --minibatch 512,1024,2048,4096,8192 --comm-sms 16,32 --out $R/minibatch_narrow.jsonl > $R/b.log 2>&1
echo "end $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
tar czf $OUT/call5.tgz -C /tmp/s17 r5
