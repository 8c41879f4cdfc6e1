#!/bin/bash
# Session 44, call 3 (nvidia-h200, <= 560 s): the robust default pick beyond EP 16 2,048.
# `mok bench --auto --auto-hint` beside nine swept settings (pull / push, three minibatches x
# comm SMs 16 / 32 / 64, capacity 1.0, ring 131,072 rows, lag 1) at EP 4 2,048 hot 0.1 (five
# presets), EP 8 4,096 zipf:1.2 (four), EP 32 512 and 4,096 uniform / hot 0.1 (two).
# Registered first: calibration/predictions/h200_robust_more_2026-12-04.jsonl (plan
# h200_robust_more_plan_2026-12-04.jsonl). Report: calibration.report_auto, calibration.registered.
R=$OUT/s44c; LIMIT=${LIMIT:-560}; source benchmarks/device/pytest_steps.sh
KN="--dispatch pull --combine push --comm-sms 16,32,64 --capacity 1.0 --macrobatch 131072 --list-lag 1 --systems gemm-only,mok --auto --auto-hint"
run() {  # run NAME BENCH-ARGS...
  local name=$1; shift
  local left=$(( LIMIT - ($(date +%s) - T0) - 10 ))
  [ $left -lt 20 ] && { echo "$name: not run (no time left)" >> $R/summary.log; return; }
  timeout $left python3 -m mok_model.cli bench "$@" $KN --out $R/$name.jsonl > $R/$name.log 2>&1
  echo "$name exit $? at $(( $(date +%s) - T0 )) s" >> $R/summary.log
}
run ep4_hot --model qwen3-30b-a3b,gpt-oss-120b,qwen3-235b-a22b,qwen3-next-80b-a3b,deepseek-v3 \
  --ep 4 --tokens 2048 --routing hot:0.1 --minibatch 3072,6144,12288
run ep8_zipf --model qwen3-30b-a3b,glm-4.5,kimi-k2,qwen3-next-80b-a3b --ep 8 --tokens 4096 \
  --routing zipf:1.2 --minibatch 3072,6144,12288
run ep32_512 --model qwen3-30b-a3b,gpt-oss-120b --ep 32 --tokens 512 --routing uniform,hot:0.1 \
  --minibatch 512,1024,2048
run ep32_4096 --model qwen3-30b-a3b,gpt-oss-120b --ep 32 --tokens 4096 --routing uniform,hot:0.1 \
  --minibatch 3072,6144,12288
tar -czf $OUT/s44c.tgz -C $OUT s44c
cat $R/summary.log; grep -h "FAILED\|Error\|refus" $R/*.log | head -20; grep -h "AUTO" $R/*.log
