#!/bin/bash
# Issue 15, part d, prepared in session 48 for the first nvidia-h200-x4 or -x8 (not run yet; <= 400 s).
# The rotated source order (KernelConfig.source_order, docs/sim-study.md "N") against rank order
# on real GPUs, each setting in both orders in one process: mixtral-8x7b (one or two experts a
# GPU) and qwen3-30b-a3b, 1,024 / 4,096 tokens, pull / push dispatch, push combine, minibatch
# 2,048, 32 comm SMs (16 MoK records), beside nccl-torch, the graph all-to-all and the GEMMs
# alone. Registered before any run with h200-hgx8's shipped parameters:
# calibration/predictions/h200x4_d_2026-12-05.jsonl and h200x8_d_2026-12-05.jsonl (both engines
# within -2.4 % .. +1.4 % between the orders at EP 4 / 8; the large gains are at EP 64+).
# Report before any refit: `python -m calibration.registered calibration/predictions/h200xN_d_2026-12-05.jsonl
# calibration/runs/h200xN/bench_d.jsonl --by model,tokens`.
# Registered again in session 51 (h200xN_d_2026-12-05b.jsonl, `bash benchmarks/cpu/register_x4x8_s51.sh`):
# NCCL's channels per peer (nccl-torch passes 0.35-1.0x the earlier files' predictions), MoK as
# session 51's model; report it beside the earlier files.
# An HGX H100 box (nvidia-h100-x4 / -x8) runs the same grid; its records name h100-hgx8 and meet
# calibration/predictions/h100xN_d_2026-12-06.jsonl (benchmarks/cpu/register_h100_boxes_s59.sh).
export PYTHONPATH=.
T0=$(date +%s); N=$(nvidia-smi -L | grep -c "H100\|H200"); R=$OUT/x${N}d; mkdir -p $R
[ "$N" -ge 4 ] || { echo "needs 4 or 8 H100s or H200s, found $N"; nvidia-smi -L; exit 0; }
{ nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader; date -u; git log -1 --format=%H; } > $R/gpu.txt 2>&1
timeout 390 python3 -m mok_kernels.bench --gpus $N --model mixtral-8x7b,qwen3-30b-a3b --tokens 1024,4096 \
  --dispatch pull,push --combine push --minibatch 2048 --comm-sms 32 --source-order rank,rotated \
  --iters 10 --timeout 90 --out $R/bench_d.jsonl > $R/bench_d.log 2>&1
echo "bench exit $? $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
tail -n 12 $R/bench_d.log | cut -c1-200; cat $R/gpu.txt | tail -2; wc -l $R/*.jsonl
