#!/bin/bash
# Session 16, device call 5 (nvidia-h200, <= 200 s): the knobs picked at launch after the refit
# on this session's records (mok bench --auto beside an 8-setting sweep) on presets without a
# shared expert, mixtral at a decode size with split_dn chosen (predictions registered first in
# calibration/predictions/h200_auto_s16_2026-12-01.jsonl). Compile warm-ups in parallel first.
export PYTHONPATH=.
T0=$(date +%s); R=/tmp/s16/r5; J=/tmp/junk5; mkdir -p $R $J
{ nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader; date -u; } > $R/gpu.txt 2>&1
G="--routing uniform --dispatch pull,push --combine push,pull --minibatch 1024,4096 --comm-sms 16,32 --capacity 1.0 --systems mok,gemm-only --auto"
W="mixtral-8x7b:8:64,1024 qwen3-235b-a22b:16:1024 gpt-oss-120b:8:4096 minimax-m2:32:256"
for w in $W; do IFS=: read m e t <<< "$w"
  timeout 95 python3 -m mok_kernels.bench --model $m --ep $e --tokens $t $G --iters 1 --warmup 0 --out $J/$m.jsonl > $J/$m.log 2>&1 &
done
wait
echo "warm-up $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
for w in $W; do IFS=: read m e t <<< "$w"
  REM=$(( 190 - ($(date +%s) - T0) )); [ $REM -gt 10 ] || break
  timeout $REM python3 -m mok_kernels.bench --model $m --ep $e --tokens $t $G --out $R/auto.jsonl >> $R/auto.log 2>&1
done
echo "end $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
tail -n 2 $J/*.log > $R/warmup_tails.log 2>&1
tar czf $OUT/call5.tgz -C /tmp/s16 r5
