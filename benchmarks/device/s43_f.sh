#!/bin/bash
# Session 43, call 5 (nvidia-h200, <= 280 s): the bench's capacity check before launch (call 4's
# EP 16 run died when the model's pick trapped on hot routing: a capacity overflow), its GPU test,
# then the EP 16 2,048-token workloads call 4 lost (registered at 0f8c19d:
# calibration/predictions/h200_presets_ep16_2048_2026-12-04.jsonl), records appended as timed.
R=$OUT/s43f; LIMIT=80; source benchmarks/device/pytest_steps.sh
step cap tests/test_kernels_gpu.py -k "overflowing_capacity_before_launch"
cat $R/summary.log
ALL=kimi-k2,glm-5,qwen3-30b-a3b,qwen3-next-80b-a3b,deepseek-v3,glm-4.5,qwen3-235b-a22b,gpt-oss-120b,llama4-maverick,minimax-m2
KN="--dispatch pull,push --combine push --minibatch 4096 --comm-sms 16,32 --capacity 0.5 --systems gemm-only,mok --auto"
left=$(( 270 - ($(date +%s) - T0) ))
timeout $left python3 -m mok_model.cli bench --model $ALL --ep 16 --tokens 2048 \
  --routing uniform,hot:0.1 $KN --out $R/ep16_2048.jsonl > $R/ep16_2048.log 2>&1
echo "ep16 exit $? at $(( $(date +%s) - T0 )) s" >> $R/summary.log
tar -czf $OUT/s43f.tgz -C $OUT s43f
cat $R/summary.log; wc -l $R/*.jsonl; grep -h "AUTO\|FAILED" $R/*.log | cut -c1-170
