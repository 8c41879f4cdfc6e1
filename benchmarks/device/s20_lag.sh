#!/bin/bash
# Prepared in session 19 (2026-12-01) for the next session with an nvidia-h200 (<= 300 s): the work
# list's lag 1-4 (KernelConfig.list_lag) across push and pull combine and minibatch 512-2048 on
# two narrow presets, a wide control (gpt-oss-120b) and two narrow drawn shapes, with the same
# rank's GEMMs alone; predictions registered first (calibration/predictions/
# h200_lag_sweep_2026-12-01.jsonl, plan h200_lag_sweep_plan_2026-12-01.jsonl). The data a rule
# that chooses the lag needs (mok_kernels/NOTES.md "The work list's lag": is a lag above 2 ever
# slower, and does pull combine pay for it at the end of the pass). Untimed in parallel: compile
# warm-up, one process per workload. Timed, one at a time.
export PYTHONPATH=.
T0=$(date +%s); R=$OUT/lag; J=/tmp/junk_lag; mkdir -p $R $J   # results straight under $OUT
{ nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader; date -u; } > $R/gpu.txt 2>&1
B="python3 -m mok_kernels.bench --rank 0 --capacity 1.0 --systems mok,gemm-only --routing uniform"
G="--dispatch pull --combine push,pull --minibatch 512,1024,2048 --comm-sms 32 --list-lag 1,2,3,4"
W=("qwen3-30b-a3b 16 2048" "qwen3-next-80b-a3b 8 4096" "gpt-oss-120b 8 2048"
   "calibration/drawn_shapes/seed4/syn4-h2560-i448-e32-k6.toml 8 1792"
   "calibration/drawn_shapes/seed5/syn5-h5376-i384-e16-k1.toml 4 2304")
# the lag's GPU tests first (two production-like shapes not yet run on a GPU), untimed, beside
# the warm-up
timeout 140 python3 -m pytest -q -rA tests/test_kernels_gpu.py -k list_lag > $R/t_lag.log 2>&1 &
for w in "${W[@]}"; do
  set -- $w
  timeout 140 $B --model $1 --ep $2 --tokens $3 $G --iters 1 --warmup 0 --out $J/w.jsonl > /dev/null 2>&1 &
done
wait
echo "warm-up $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
for w in "${W[@]}"; do
  set -- $w
  timeout 40 $B --model $1 --ep $2 --tokens $3 $G --out $R/lag_sweep.jsonl >> $R/lag_sweep.log 2>&1
  echo "$1 $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
done
