#!/bin/bash
# SUPERSEDED by s25_decode.sh (the same registration, all six workloads); kept as written.
# NOT RUN in session 24: its device time ran out before a machine could be started. Run it as
# is in the next session (the registration stands: the model it predicts with is unchanged).
# Session 24, fourth device call (nvidia-h200, <= 160 s: what the session's device time left):
# the three worst of the presets' decode-size
# workloads of the space sweep (MoK / same-rank GEMMs alone 1.56-1.71x with its four sampled
# settings, issue 13's goal <= 1.5x), now with a sweep of 24 settings (pull / push, capacity 1.0,
# minibatch 256-2,048 x 16 / 32 / 64 comm SMs x lag 1 / 2), the automatic pick and the GEMMs
# alone, uniform routing. Predictions registered before the run:
# calibration/predictions/h200_decode_worst_2026-12-02.jsonl (plan beside it,
# `benchmarks/auto_plan.py --workloads W --minibatch 256,512,1024,2048 --comm-sms 16,32,64
# --list-lag 1,2`). Report: `python -m calibration.registered PRED RUNS`.
export PYTHONPATH=.
T0=$(date +%s); R=$OUT/s24d; J=/tmp/junk24d; mkdir -p $R $J
{ nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader; date -u; } > $R/gpu.txt 2>&1
B="python3 -m mok_kernels.bench --rank 0 --routing uniform --capacity 1.0 --dispatch pull --combine push"
G="--minibatch 256,512,1024,2048 --comm-sms 16,32,64 --list-lag 1,2"
W=("qwen3-30b-a3b 32 256" "qwen3-next-80b-a3b 32 256" "mixtral-8x7b 8 64")   # of the six planned
for w in "${W[@]}"; do      # compile every kernel variant once, in parallel
  set -- $w
  timeout 95 $B --model $1 --ep $2 --tokens $3 $G --auto --systems mok,gemm-only --iters 1 \
    --warmup 0 --out $J/w.jsonl > /dev/null 2>&1 &
done
wait
echo "warm-up $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
for w in "${W[@]}"; do
  set -- $w
  REM=$(( 155 - ($(date +%s) - T0) )); [ $REM -lt 10 ] && break
  timeout $REM $B --model $1 --ep $2 --tokens $3 $G --auto --systems mok,gemm-only \
    --out $R/decode_worst.jsonl >> $R/decode_worst.log 2>&1
done
echo "sweep $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
