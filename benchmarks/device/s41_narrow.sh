#!/bin/bash
# Prepared in session 40 (nvidia-h200, <= 560 s): the narrow presets' comm-SM response on the
# pipelined copies (issue 13's 1.2x): three presets of 512-1,536-wide experts at EP 8, 2,048 and
# 8,192 tokens, pull dispatch, push and pull combine, 8-32 comm SMs, beside the same rank's GEMMs
# alone and the model's own pick (--auto). Registered before any run:
# calibration/predictions/h200_narrow_comm_2026-12-04.jsonl (the same grid). Report with
#   python -m calibration.registered PRED RUNS --by model,tokens
#   python benchmarks/kernel_space.py RUNS
R=$OUT/s41n; mkdir -p $R; export PYTHONPATH=.
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo "not an H200"; exit 0; }
{ nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader; date -u; } > $R/gpu.txt
G="--model qwen3-30b-a3b,qwen3-next-80b-a3b,minimax-m2 --ep 8 --tokens 2048,8192 --dispatch pull
   --combine push,pull --minibatch 4096 --comm-sms 8,12,16,24,32"
timeout 540 python3 -m mok_model.cli bench $G --systems mok,gemm-only --auto \
  --out $R/narrow_comm.jsonl > $R/narrow_comm.log 2>&1
echo "bench exit $? at $(date -u)" >> $R/gpu.txt
cat $R/gpu.txt; tail -n 25 $R/narrow_comm.log | cut -c1-200; wc -l $R/narrow_comm.jsonl
