#!/bin/bash
# Session 20 (2026-12-02), nvidia-h200, <= 240 s: is the 12.7% regret of the automatic pick on
# syn4-h2048-i320-e8-k2-s1 (EP 8, 2,048 tokens) the model's or the run's? The best swept settings
# of s20_auto.sh (minibatch 2048 / 4096, 32 / 64 comm SMs, lag 1 / 2) and the automatic pick,
# three times each, interleaved; the configurations' predictions are those registered for
# s20_auto.sh (calibration/predictions/h200_auto_lag_2026-12-02.jsonl).
export PYTHONPATH=.
R=$OUT/s20p; mkdir -p $R
{ nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader; date -u; } > $R/gpu.txt 2>&1
B="python3 -m mok_kernels.bench --rank 0 --routing uniform --systems mok --capacity 1.0 --model calibration/drawn_shapes/seed4/syn4-h2048-i320-e8-k2-s1.toml --ep 8 --tokens 2048 --dispatch pull --combine push --minibatch 2048,4096,8192 --comm-sms 32,64 --list-lag 1,2 --auto"
timeout 120 $B --iters 1 --warmup 0 --out /tmp/w.jsonl > /dev/null 2>&1
for rep in 1 2 3; do
  timeout 40 $B --out $R/repeat.jsonl >> $R/repeat.log 2>&1
  echo "rep $rep $(date -u +%T)" >> $R/gpu.txt
done
