#!/bin/bash
# Session 21 (2026-12-02), nvidia-h200, <= 400 s: the automatic pick at decode sizes (64-512
# tokens per GPU), beside a sweep of push combine x minibatch 256-2048 x 16 / 32 / 64 comm SMs x
# lag 1 / 2 (pull dispatch, capacity 1.0), on seven workloads no run has measured, timed twice.
# Predictions registered before the run: calibration/predictions/h200_auto_decode_2026-12-02.jsonl
# (plan h200_auto_decode_plan_2026-12-02.jsonl: `benchmarks/auto_plan.py --workloads W
# --minibatch 256,512,1024,2048 --comm-sms 16,32,64 --list-lag 1,2`, W as below).
# Report: `python -m calibration.registered PRED RUNS_a` and `... RUNS_b`, each on its own, then
# `python -m calibration.report_auto RUNS_a RUNS_b`.
export PYTHONPATH=.
T0=$(date +%s); R=$OUT/s21d; J=/tmp/junk21d; mkdir -p $R $J
{ nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader; date -u; } > $R/gpu.txt 2>&1
B="python3 -m mok_kernels.bench --rank 0 --routing uniform"
G="--capacity 1.0 --dispatch pull --combine push --minibatch 256,512,1024,2048 --comm-sms 16,32,64 --list-lag 1,2 --auto"
D=calibration/drawn_shapes
W=("kimi-k2 16 128" "glm-5 32 64" "qwen3-30b-a3b 8 256" "gpt-oss-120b 8 64" "qwen3-235b-a22b 32 128"
   "$D/seed3/syn3-h5888-i3072-e64-k7-s1.toml 16 256" "$D/seed4/syn4-h4352-i1088-e32-k7-s1.toml 8 512")
for w in "${W[@]}"; do      # compile every kernel variant once, in parallel
  set -- $w
  timeout 200 $B --model $1 --ep $2 --tokens $3 $G --systems mok --iters 1 --warmup 0 --out $J/w.jsonl > /dev/null 2>&1 &
done
wait
echo "warm-up $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
for rep in a b; do
  for w in "${W[@]}"; do
    set -- $w
    timeout 60 $B --model $1 --ep $2 --tokens $3 $G --systems mok,gemm-only --out $R/auto_$rep.jsonl >> $R/auto_$rep.log 2>&1
    echo "$rep $1 $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
  done
done
