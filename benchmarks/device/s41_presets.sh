#!/bin/bash
# Usage: bash benchmarks/device/s41_presets.sh MODELS TAG SECONDS (nvidia-h200)
# Session 41: issue 13's kernel goal on the kernel whose push lanes copy runs: each preset in
# MODELS (comma list) at EP 8 and 32 emulated, 256 and 4,096 tokens per GPU, uniform routing:
# the same rank's GEMMs alone, four MoK settings (pull / push dispatch, push combine, 16 / 32
# comm SMs, minibatch 4,096) and the model's own pick (--auto), appended to $OUT/TAG/presets.jsonl
# until SECONDS have passed (records are appended as they are timed). Registered before any run:
# calibration/predictions/h200_presets_runs_2026-12-04.jsonl (every preset but mixtral-8x7b,
# whose 8 experts do not divide over 32 ranks; the same grid).
# Report: python -m calibration.registered PRED RUNS --by model,tokens;
#         python benchmarks/kernel_space.py RUNS
M=${1:?models}; TAG=${2:?tag}; S=${3:?seconds}
R=$OUT/$TAG; mkdir -p $R; export PYTHONPATH=.
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo "not an H200"; exit 0; }
{ nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader; date -u; git log -1 --format=%H; } > $R/gpu.txt
timeout $S python3 -m mok_model.cli bench --model $M --ep 8,32 --tokens 256,4096 --dispatch pull,push \
  --combine push --minibatch 4096 --comm-sms 16,32 --systems gemm-only,mok --auto \
  --out $R/presets.jsonl > $R/presets.log 2>&1
echo "bench exit $? at $(date -u)" >> $R/gpu.txt
cat $R/gpu.txt; grep -i "gemm-only\|AUTO" $R/presets.log | cut -c1-160; wc -l $R/presets.jsonl
