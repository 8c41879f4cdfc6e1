#!/bin/bash
# Session 43, call 4 (nvidia-h200, <= 480 s): issue 13's kernel table where it had no workload:
# every preset at EP 4 emulated with hot routing (hot:0.1, expert 0 on the emulated rank) at 512
# and 2,048 tokens, and at EP 16 at 2,048 tokens (uniform and hot; not mixtral-8x7b, whose 8
# experts do not divide over 16 ranks): the same rank's GEMMs alone, four MoK settings (pull /
# push dispatch, push combine, 16 / 32 comm SMs, minibatch 4,096) and the model's pick (--auto).
# Registered before the run: calibration/predictions/h200_presets_ep4_hot_2026-12-04.jsonl and
# h200_presets_ep16_2048_2026-12-04.jsonl. Records appended as they are timed.
R=$OUT/s43e; mkdir -p $R; export PYTHONPATH=.; T0=$(date +%s)
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo "not an H200"; exit 0; }
{ nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader; date -u; } > $R/gpu.txt
ALL=deepseek-v3,kimi-k2,glm-4.5,glm-5,qwen3-235b-a22b,qwen3-30b-a3b,qwen3-next-80b-a3b,gpt-oss-120b,llama4-maverick,minimax-m2
KN="--dispatch pull,push --combine push --minibatch 4096 --comm-sms 16,32 --capacity 0.5 --systems gemm-only,mok --auto"
timeout 220 python3 -m mok_model.cli bench --model $ALL,mixtral-8x7b --ep 4 --tokens 512,2048 \
  --routing hot:0.1 $KN --out $R/ep4_hot.jsonl > $R/ep4_hot.log 2>&1
echo "ep4 exit $? at $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
left=$(( 470 - ($(date +%s) - T0) ))
timeout $left python3 -m mok_model.cli bench --model $ALL --ep 16 --tokens 2048 \
  --routing uniform,hot:0.1 $KN --out $R/ep16_2048.jsonl > $R/ep16_2048.log 2>&1
echo "ep16 exit $? at $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
tar -czf $OUT/s43e.tgz -C $OUT s43e
cat $R/gpu.txt; wc -l $R/*.jsonl; grep -h "AUTO" $R/*.log | cut -c1-150; grep -h "Error\|error" $R/*.log | head
