#!/bin/bash
# Session 25, first device call (nvidia-h200, <= 420 s): s24_decode.sh with all six workloads of
# its registration (session 24 had time for three and then none). The presets' worst decode-size
# workloads of the space sweep (MoK / same-rank GEMMs alone 1.56-1.71x with its four sampled
# settings, issue 13's goal <= 1.5x) under a sweep of 24 settings (pull / push, capacity 1.0,
# minibatch 256-2,048 x 16 / 32 / 64 comm SMs x lag 1 / 2), the automatic pick and the GEMMs
# alone, uniform routing. Predictions registered before the run (model unchanged since):
# calibration/predictions/h200_decode_worst_2026-12-02.jsonl, plan beside it. Report:
# `python -m calibration.registered PRED calibration/runs/h200_unseen/decode_worst.jsonl`.
export PYTHONPATH=.
T0=$(date +%s); R=$OUT/s25d; J=/tmp/junk25d; mkdir -p $R $J
{ nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader; date -u; } > $R/gpu.txt 2>&1
B="python3 -m mok_kernels.bench --rank 0 --routing uniform --capacity 1.0 --dispatch pull --combine push"
G="--minibatch 256,512,1024,2048 --comm-sms 16,32,64 --list-lag 1,2"
W=("qwen3-30b-a3b 32 256" "qwen3-next-80b-a3b 32 256" "mixtral-8x7b 8 64"
   "qwen3-30b-a3b 32 64" "gpt-oss-120b 32 256" "qwen3-235b-a22b 32 64")
warm() {    # compile every kernel variant of the given workloads once, in parallel
  for w in "$@"; do
    set -- $w
    timeout 110 $B --model $1 --ep $2 --tokens $3 $G --auto --systems mok,gemm-only --iters 1 \
      --warmup 0 --out $J/w.jsonl > /dev/null 2>&1 &
  done
  wait
}
warm "${W[@]:0:3}"; warm "${W[@]:3:3}"
echo "warm-up $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
for w in "${W[@]}"; do
  set -- $w
  REM=$(( 410 - ($(date +%s) - T0) )); [ $REM -lt 10 ] && break
  timeout $REM $B --model $1 --ep $2 --tokens $3 $G --auto --systems mok,gemm-only \
    --out $R/decode_worst.jsonl >> $R/decode_worst.log 2>&1
done
echo "sweep $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
tail -n 40 $R/decode_worst.log; cat $R/gpu.txt
