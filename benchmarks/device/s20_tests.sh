#!/bin/bash
# Session 20 (2026-12-02), nvidia-h200, <= 400 s. GPU tests of the lag chosen at launch
# (tests/test_knobs_gpu.py: a production shape whose tuner picks lag 2, against float32), the
# training path that builds layers with unset knobs (tests/test_autograd_gpu.py) and the lag's own
# tests; then lags past the tuner's 1-4 (4 / 6 / 8) on two narrow shapes, registered first
# (calibration/predictions/h200_long_lag_2026-12-02.jsonl).
export PYTHONPATH=.
T0=$(date +%s); R=$OUT/s20t; mkdir -p $R
{ nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader; date -u; } > $R/gpu.txt 2>&1
B="python3 -m mok_kernels.bench --rank 0 --routing uniform --systems mok --capacity 1.0 --dispatch pull --combine push --minibatch 512,1024,2048 --comm-sms 64 --list-lag 4,6,8"
D=calibration/drawn_shapes
(timeout 150 $B --model $D/seed2/syn2-h7936-i256-e64-k6-s1.toml --ep 8 --tokens 1024 --iters 1 --warmup 0 --out /tmp/w.jsonl > /dev/null 2>&1
 timeout 150 $B --model $D/seed4/syn4-h2560-i448-e32-k6.toml --ep 8 --tokens 1792 --iters 1 --warmup 0 --out /tmp/w.jsonl > /dev/null 2>&1) &
timeout 300 python3 -m pytest -q -rA tests/test_knobs_gpu.py tests/test_autograd_gpu.py > $R/t_knobs.log 2>&1
echo "tests $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
wait
timeout 40 $B --model $D/seed2/syn2-h7936-i256-e64-k6-s1.toml --ep 8 --tokens 1024 --out $R/long_lag.jsonl >> $R/long_lag.log 2>&1
timeout 40 $B --model $D/seed4/syn4-h2560-i448-e32-k6.toml --ep 8 --tokens 1792 --out $R/long_lag.jsonl >> $R/long_lag.log 2>&1
echo "lags $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
