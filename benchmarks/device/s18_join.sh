#!/bin/bash
# Prepared in session 18 (2026-12-01), when no device was lent; run it in the next session that
# has an nvidia-h200 (<= 300 s). The comm-SM puzzle of drawn seeds 2 and 3 (docs/calibration.md
# "The in-order list"): syn2-h7936-i6848 at EP 4, 96 tokens ran 0.22-0.24 ms with 8-16 comm SMs
# and 0.29-0.30 ms with 32, and its GEMM phases alone (mok-gemm) took 0.26 ms. Here: every comm-SM
# count 8-64 with push combine (the comm programs join the compute) and pull combine (they do
# not), beside the GEMM phases alone, on both seed-2 and seed-3 shapes where it showed; predictions
# registered first (calibration/predictions/h200_join_{a,b}_2026-12-01.jsonl). Timed, one at a time.
export PYTHONPATH=.
T0=$(date +%s); R=/tmp/s19/r3; mkdir -p $R
{ nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader; date -u; git log -1 --oneline; } > $R/gpu.txt 2>&1
S2=calibration/drawn_shapes/seed2/syn2-h7936-i6848-e8-k1.toml
S3=calibration/drawn_shapes/seed3/syn3-h7936-i6336-e64-k1.toml
B="python3 -m mok_kernels.bench --rank 0 --capacity 1.0 --systems mok,gemm-only,mok-gemm"
G="--routing uniform --dispatch pull --combine push,pull --minibatch 4096 --comm-sms 8,16,24,32,48,64"
timeout 130 $B --model $S2 --ep 4 --tokens 96 $G --out $R/join.jsonl > $R/a.log 2>&1
echo "a $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
timeout 130 $B --model $S3 --ep 32 --tokens 128 $G --out $R/join.jsonl > $R/b.log 2>&1
echo "end $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
tar czf $OUT/join.tgz -C /tmp/s19 r3
