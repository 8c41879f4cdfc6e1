#!/bin/bash
# Prepared in session 43 (nvidia-h200, <= 400 s), not yet run: the layer's capacity that holds
# one hot expert (mok_kernels/knobs.py hot_expert_need_rows). First the GPU tests that reach
# it (the bench's refusal test now expects the pick to run onehot at EP 16; the knob tests
# through the layer; autograd / Hugging Face layers), then `mok bench --auto` at EP 16 2,048
# with hot 0.1 on four presets, where session 43's pick (capacity 0.125) overflowed: the pick
# should now run (capacity 0.25-0.5) and be recorded beside the swept settings. The swept setting
# is registered: calibration/predictions/h200_auto_hot_ep16_2026-12-04.jsonl (session 43).
R=$OUT/s44a; LIMIT=${LIMIT:-390}; source benchmarks/device/pytest_steps.sh
step cap tests/test_kernels_gpu.py -k "overflowing_capacity or bench" &
step knobs tests/test_knobs_gpu.py &
step auto tests/test_autograd_gpu.py &
wait
left=$(( LIMIT - ($(date +%s) - T0) - 10 ))
timeout $left python3 -m mok_model.cli bench --model kimi-k2,qwen3-30b-a3b,gpt-oss-120b,minimax-m2 \
  --ep 16 --tokens 2048 --routing hot:0.1 --dispatch pull --combine push --minibatch 4096 \
  --comm-sms 32 --capacity 0.5 --systems gemm-only,mok --auto --out $R/auto_hot.jsonl \
  > $R/auto_hot.log 2>&1
echo "auto_hot exit $? at $(( $(date +%s) - T0 )) s" >> $R/summary.log
tar -czf $OUT/s44a.tgz -C $OUT s44a
cat $R/summary.log; grep -h "FAILED\|Error" $R/*.log | head -20; grep -h "AUTO" $R/auto_hot.log
