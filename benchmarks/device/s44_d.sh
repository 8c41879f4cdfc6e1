#!/bin/bash
# Session 44, call 4 (nvidia-h200, <= 560 s): the robust default pick at decode sizes (64-256
# tokens per GPU), seven presets x uniform / hot 0.1, beside twelve swept settings (pull / push,
# minibatch 256-2,048 x comm SMs 16 / 32 / 64, capacity 1.0, ring 131,072 rows, lag 1) and the
# pick told the routing. Registered first: calibration/predictions/h200_robust_decode_2026-12-04.jsonl
# (plan h200_robust_decode_plan_2026-12-04.jsonl). Report: calibration.report_auto, registered.
R=$OUT/s44d; LIMIT=${LIMIT:-560}; source benchmarks/device/pytest_steps.sh
KN="--dispatch pull --combine push --comm-sms 16,32,64 --minibatch 256,512,1024,2048 --capacity 1.0 --macrobatch 131072 --list-lag 1 --systems gemm-only,mok --auto --auto-hint --routing uniform,hot:0.1"
for w in qwen3-30b-a3b:8:256 glm-5:32:64 kimi-k2:16:128 gpt-oss-120b:8:64 qwen3-235b-a22b:32:128 \
         deepseek-v3:16:256 qwen3-next-80b-a3b:16:128; do
  IFS=: read m ep n <<< "$w"
  left=$(( LIMIT - ($(date +%s) - T0) - 10 ))
  [ $left -lt 30 ] && { echo "$w: not run (no time left)" >> $R/summary.log; continue; }
  timeout $left python3 -m mok_model.cli bench --model $m --ep $ep --tokens $n $KN \
    --out $R/decode.jsonl >> $R/decode.log 2>&1
  echo "$w exit $? at $(( $(date +%s) - T0 )) s" >> $R/summary.log
done
tar -czf $OUT/s44d.tgz -C $OUT s44d
cat $R/summary.log; grep -h "FAILED\|Error\|refus" $R/*.log | head -20; grep -h "AUTO" $R/decode.log
