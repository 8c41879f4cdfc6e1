#!/bin/bash
# Prepared in session 43 (nvidia-h200, <= 560 s), not yet run.
# 1. The GPU tests of session 43's CPU-side changes: the bench's refusal test (it now expects the
#    pick to run onehot at EP 16: the layer's capacity holds one hot expert, mok_model/
#    capacity.py), the knob tests through the layer (with KernelConfig.knob_routing: hot, zipf),
#    autograd / Hugging Face layers.
# 2. `mok bench --auto --auto-hint` at EP 16 2,048 with hot 0.1 on four presets, where session
#    43's pick (capacity 0.125) overflowed: the default pick should now run (0.25-0.5); the told
#    pick beside it. Swept setting registered: calibration/predictions/
#    h200_auto_hot_ep16_2026-12-04.jsonl.
# 3. The told pick at EP 4 hot 0.1, 512 / 2,048 tokens, on the five presets whose default pick
#    ran 3-13% from the best (session 43), beside the same four swept settings: every setting and
#    both picks registered in calibration/predictions/h200_auto_hint_2026-12-04.jsonl (plan
#    h200_auto_hint_plan_2026-12-04.jsonl). Report: python -m calibration.report_auto RUNS and
#    python -m calibration.registered PRED RUNS --by model,tokens.
# 4. If time is left: the narrow presets' pass split into schedule / megakernel / epilogue.
R=$OUT/s44a; LIMIT=${LIMIT:-560}; source benchmarks/device/pytest_steps.sh
step cap tests/test_kernels_gpu.py -k "overflowing_capacity or bench" &
step knobs tests/test_knobs_gpu.py &
step auto tests/test_autograd_gpu.py &
wait
KN="--combine push --minibatch 4096 --capacity 0.5 --systems gemm-only,mok --auto --auto-hint"
timeout 120 python3 -m mok_model.cli bench --model kimi-k2,qwen3-30b-a3b,gpt-oss-120b,minimax-m2 \
  --ep 16 --tokens 2048 --routing hot:0.1 --dispatch pull --comm-sms 32 $KN \
  --out $R/auto_hot_ep16.jsonl > $R/auto_hot_ep16.log 2>&1
echo "ep16 exit $? at $(( $(date +%s) - T0 )) s" >> $R/summary.log
left=$(( LIMIT - ($(date +%s) - T0) - 10 ))
timeout $left python3 -m mok_model.cli bench \
  --model qwen3-next-80b-a3b,gpt-oss-120b,qwen3-30b-a3b,qwen3-235b-a22b,deepseek-v3 --ep 4 \
  --tokens 512,2048 --routing hot:0.1 --dispatch pull,push --comm-sms 16,32 $KN \
  --out $R/auto_hint_ep4.jsonl > $R/auto_hint_ep4.log 2>&1
echo "ep4 exit $? at $(( $(date +%s) - T0 )) s" >> $R/summary.log
# 4. Where the narrow presets' pass goes (issue 13): schedule / megakernel / epilogue, eager
left=$(( LIMIT - ($(date +%s) - T0) - 5 ))
[ $left -gt 30 ] && timeout $left python3 -m mok_model.cli bench --model qwen3-30b-a3b,qwen3-next-80b-a3b \
  --ep 8 --tokens 4096 --dispatch pull --combine push --minibatch 4096 --comm-sms 32 --capacity 0.5 \
  --systems mok --breakdown --out $R/breakdown.jsonl > $R/breakdown.log 2>&1
tar -czf $OUT/s44a.tgz -C $OUT s44a
cat $R/summary.log; grep -h "FAILED\|Error" $R/*.log | head -20; grep -h "AUTO" $R/auto_*.log
