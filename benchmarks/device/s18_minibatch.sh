#!/bin/bash
# Prepared in session 18 (2026-12-01), when no device was lent; run it in the next session that
# has an nvidia-h200 (<= 480 s). The in-order work list's period (gemm_table.list_period) across
# minibatch sizes on shapes it was not made from: a drawn narrow shape (seed 4, I 448 under H
# 2560), a preset where it binds a little (qwen3-30b-a3b, I 768 under H 2048) and one where it
# does not bind (gpt-oss-120b, I = H = 2880); predictions registered with the h200-1 parameters
# refitted in session 18 before the run (calibration/predictions/h200_minibatch_list_{a,b,c}_
# 2026-12-01.jsonl). Timed, one at a time.
export PYTHONPATH=.
T0=$(date +%s); R=/tmp/s19/r2; mkdir -p $R
{ nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader; date -u; git log -1 --oneline; } > $R/gpu.txt 2>&1
S4=calibration/drawn_shapes/seed4/syn4-h2560-i448-e32-k6.toml
B="python3 -m mok_kernels.bench --rank 0 --combine push --capacity 1.0 --systems mok,gemm-only,mok-gemm"
G="--routing uniform --dispatch pull,push --minibatch 512,1024,2048,4096 --comm-sms 32,64"
timeout 160 $B --model $S4 --ep 8 --tokens 1792 $G --out $R/minibatch_list.jsonl > $R/a.log 2>&1
echo "a $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
timeout 150 $B --model qwen3-30b-a3b --ep 16 --tokens 2048 $G --out $R/minibatch_list.jsonl > $R/b.log 2>&1
echo "b $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
timeout 150 $B --model gpt-oss-120b --ep 8 --tokens 2048 $G --out $R/minibatch_list.jsonl > $R/c.log 2>&1
echo "end $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
tar czf $OUT/minibatch_list.tgz -C /tmp/s19 r2
