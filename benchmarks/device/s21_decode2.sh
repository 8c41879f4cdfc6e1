#!/bin/bash
# Session 21 (2026-12-02), nvidia-h200, <= 420 s: the automatic pick at decode sizes once more,
# after the model stopped charging minibatch boundaries that fall between experts (mok_model/
# analytic.py boundary_split_share). Six workloads no run has measured and the two s21_decode.sh
# picks that were more than 3% from the best (glm-5 EP 32 64, qwen3-30b-a3b EP 8 256), the same
# grid as s21_decode.sh, timed twice. Predictions registered before the run:
# calibration/predictions/h200_auto_decode2_2026-12-02.jsonl (plan
# h200_auto_decode2_plan_2026-12-02.jsonl: `benchmarks/auto_plan.py --workloads W --minibatch
# 256,512,1024,2048 --comm-sms 16,32,64 --list-lag 1,2`, W as below).
export PYTHONPATH=.
T0=$(date +%s); R=$OUT/s21e; J=/tmp/junk21e; mkdir -p $R $J
{ nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader; date -u; } > $R/gpu.txt 2>&1
B="python3 -m mok_kernels.bench --rank 0 --routing uniform"
G="--capacity 1.0 --dispatch pull --combine push --minibatch 256,512,1024,2048 --comm-sms 16,32,64 --list-lag 1,2 --auto"
W=("deepseek-v3 32 64" "glm-4.5 16 128" "minimax-m2 8 256" "qwen3-next-80b-a3b 16 64"
   "llama4-maverick 16 256" "mixtral-8x7b 8 512" "glm-5 32 64" "qwen3-30b-a3b 8 256")
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
