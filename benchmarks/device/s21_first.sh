#!/bin/bash
# Prepared in session 20 (2026-12-02) for the next session with an nvidia-h200 (<= 480 s).
# 1. The work list's lag in group mode (LocalGroup: each rank its own launch, the cross-GPU
#    protocol), never run on a GPU yet: same bits as lag 1, against float32.
# 2. The automatic pick (`mok bench --auto`, the tuner's knobs and lag) beside a sweep of push
#    combine x minibatch 512-8192 x 32 / 64 comm SMs x lag 1 / 2 / 4 on six workloads no run has
#    measured, the sweep timed twice (two record files: a regret from the better of two runs per
#    setting, as run-to-run spread moved s20's syn4 regret from 12.7% to 1.2-1.7%). Predictions
#    registered before the run: calibration/predictions/h200_auto_s21_2026-12-02.jsonl (plan
#    h200_auto_s21_plan_2026-12-02.jsonl, `benchmarks/auto_plan.py --workloads` as below).
#    Report: `python -m calibration.registered PRED RUNS_a` and `... RUNS_b`, each on its own.
export PYTHONPATH=.
T0=$(date +%s); R=$OUT/s21; J=/tmp/junk21; mkdir -p $R $J   # results straight under $OUT
{ nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader; date -u; } > $R/gpu.txt 2>&1
B="python3 -m mok_kernels.bench --rank 0 --routing uniform"
G="--capacity 1.0 --dispatch pull --combine push --minibatch 512,1024,2048,4096,8192 --comm-sms 32,64 --list-lag 1,2,4 --auto"
D=calibration/drawn_shapes
W=("glm-5 16 2048" "gpt-oss-120b 32 1024" "deepseek-v3 32 512"
   "$D/seed5/syn5-h1792-i960-e256-k4-s1.toml 16 1024" "$D/seed4/syn4-h2816-i704-e160-k7-s1.toml 16 2048"
   "qwen3-next-80b-a3b 32 2048")
timeout 200 python3 -m pytest -q -rA tests/test_kernels_gpu.py -k local_group_list_lag > $R/t_group_lag.log 2>&1 &
for w in "${W[@]}"; do
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
