#!/bin/bash
# Session 22 (2026-12-02), nvidia-h200, <= 480 s: the automatic pick of the refitted model
# (calibration.defaults run this session) on thirteen workloads no run has measured, beside a
# sweep (pull dispatch, push combine, capacity 1.0), each timed twice where time allows:
#  - mid (MID below, 1-8K tokens): minibatch 512-8192 x 32 / 64 comm SMs x lag 1 / 2 / 4;
#  - decode (DEC, 64-512 tokens): minibatch 256-2048 x 16 / 32 / 64 comm SMs x lag 1 / 2.
# Predictions registered before the run: calibration/predictions/h200_auto_s22_{mid,decode}_
# 2026-12-02.jsonl (plans beside them: `benchmarks/auto_plan.py --workloads W` with the grids above).
# Report: `python -m calibration.registered PRED RUNS` per run file, then
# `python -m calibration.report_auto RUNS_a RUNS_b`.
export PYTHONPATH=.
T0=$(date +%s); R=$OUT/s22a; J=/tmp/junk22a; mkdir -p $R $J
{ nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader; date -u; } > $R/gpu.txt 2>&1
B="python3 -m mok_kernels.bench --rank 0 --routing uniform"
GM="--capacity 1.0 --dispatch pull --combine push --minibatch 512,1024,2048,4096,8192 --comm-sms 32,64 --list-lag 1,2,4 --auto"
GD="--capacity 1.0 --dispatch pull --combine push --minibatch 256,512,1024,2048 --comm-sms 16,32,64 --list-lag 1,2 --auto"
S6=calibration/drawn_shapes/seed6
MID=("minimax-m2 16 4096" "llama4-maverick 8 1024" "qwen3-235b-a22b 8 2048" "deepseek-v3 8 8192"
     "glm-4.5 32 6144" "$S6/syn6-h4864-i4096-e160-k7.toml 8 3072")
DEC=("kimi-k2 32 64" "glm-4.5 8 256" "qwen3-next-80b-a3b 8 512" "llama4-maverick 32 128"
     "gpt-oss-120b 16 256" "minimax-m2 32 128" "$S6/syn6-h7424-i1856-e8-k2-s1.toml 4 256")
for w in "${MID[@]}"; do      # compile every kernel variant once, in parallel
  set -- $w
  timeout 200 $B --model $1 --ep $2 --tokens $3 $GM --systems mok --iters 1 --warmup 0 --out $J/w.jsonl > /dev/null 2>&1 &
done
for w in "${DEC[@]}"; do
  set -- $w
  timeout 200 $B --model $1 --ep $2 --tokens $3 $GD --systems mok --iters 1 --warmup 0 --out $J/w.jsonl > /dev/null 2>&1 &
done
wait
echo "warm-up $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
for rep in a b; do
  for w in "${MID[@]}"; do
    [ $(( $(date +%s) - T0 )) -gt 420 ] && break
    set -- $w
    timeout 60 $B --model $1 --ep $2 --tokens $3 $GM --systems mok,gemm-only --out $R/mid_$rep.jsonl >> $R/mid_$rep.log 2>&1
    echo "$rep $1 $2 $3 $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
  done
  for w in "${DEC[@]}"; do
    [ $(( $(date +%s) - T0 )) -gt 420 ] && break
    set -- $w
    timeout 40 $B --model $1 --ep $2 --tokens $3 $GD --systems mok,gemm-only --out $R/dec_$rep.jsonl >> $R/dec_$rep.log 2>&1
    echo "$rep $1 $2 $3 $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
  done
done
