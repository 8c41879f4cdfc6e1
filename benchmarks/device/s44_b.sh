#!/bin/bash
# Session 44, call 2 (nvidia-h200, <= 560 s): the layer's robust default pick on hardware.
# 1. The knob GPU tests (the layer not told the routing picks robust knobs: uniform and hot
#    routing against float32).
# 2. `mok bench --auto --auto-hint` at EP 16, 2,048 tokens, five presets, hot 0.1 then uniform:
#    nine swept settings (pull / push, minibatch 3,072 / 6,144 / 12,288 x comm SMs 16 / 32 / 64,
#    capacity 1.0, ring 131,072 rows, lag 1), the robust pick and the pick told the routing.
#    Registered first: calibration/predictions/h200_robust_ep16_2026-12-04.jsonl (plan
#    h200_robust_ep16_plan_2026-12-04.jsonl, benchmarks/auto_plan.py --auto-hint). Report:
#    python -m calibration.report_auto RUNS; python -m calibration.registered PRED RUNS.
R=$OUT/s44b; LIMIT=${LIMIT:-560}; source benchmarks/device/pytest_steps.sh
step knobs tests/test_knobs_gpu.py
left=$(( LIMIT - ($(date +%s) - T0) - 10 ))
timeout $left python3 -m mok_model.cli bench \
  --model qwen3-30b-a3b,gpt-oss-120b,minimax-m2,kimi-k2,qwen3-235b-a22b --ep 16 --tokens 2048 \
  --routing hot:0.1,uniform --dispatch pull --combine push --minibatch 3072,6144,12288 \
  --comm-sms 16,32,64 --capacity 1.0 --macrobatch 131072 --list-lag 1 \
  --systems gemm-only,mok --auto --auto-hint --out $R/robust_ep16.jsonl > $R/robust_ep16.log 2>&1
echo "ep16 exit $? at $(( $(date +%s) - T0 )) s" >> $R/summary.log
tar -czf $OUT/s44b.tgz -C $OUT s44b
cat $R/summary.log; grep -h "FAILED\|Error" $R/*.log | head -20; grep -h "AUTO" $R/robust_ep16.log
