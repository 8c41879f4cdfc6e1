#!/bin/bash
# Prepared in session 52 (nvidia-h200, <= 560 s; not run yet): does a push dispatch pay per
# minibatch a cost that grows with its comm programs? (mok_kernels/NOTES.md "Session 52": push at
# 64 comm SMs read 7-15 % slower at minibatch 512 than the model says, relative to 4,096-8,192, on
# four workloads a cell.) One GPU emulating EP 8: qwen3-235b-a22b and kimi-k2 at 4,096 tokens,
# push and pull dispatch, push combine, minibatch 256 / 512 / 1,024 / 4,096 x comm SMs 8 / 16 /
# 32 / 64 / 96, beside the GEMMs alone. Registered before any run (shipped h200-1, analytic and
# simulator): calibration/predictions/h200_push_lanes_2026-12-05.jsonl. Report with
#   python -m calibration.registered calibration/predictions/h200_push_lanes_2026-12-05.jsonl \
#       calibration/runs/h200/push_lanes.jsonl --by model,tokens
# then the push / pull step by comm SMs at each minibatch, before any model change.
R=$OUT/s53p; mkdir -p $R; export PYTHONPATH=.
# On an H100 the same grid is registered with h100-1's parameters (session 53, before its run):
# calibration/predictions/h100_push_lanes_2026-12-05.jsonl; records calibration/runs/h100/.
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q "H200\|H100" || { echo "not an H100 or H200"; exit 0; }
{ nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader; date -u; } > $R/gpu.txt
G="--model qwen3-235b-a22b,kimi-k2 --ep 8 --tokens 4096 --dispatch push,pull --combine push
   --minibatch 256,512,1024,4096 --comm-sms 8,16,32,64,96"
timeout 540 python3 -m mok_model.cli bench $G --systems mok,gemm-only --iters 10 \
  --out $R/push_lanes.jsonl > $R/push_lanes.log 2>&1
echo "bench exit $? at $(date -u)" >> $R/gpu.txt
cat $R/gpu.txt; tail -n 25 $R/push_lanes.log | cut -c1-200; wc -l $R/push_lanes.jsonl
