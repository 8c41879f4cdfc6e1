#!/bin/bash
# Issue 15, part a, prepared in session 33 for the first nvidia-h200-x4 or -x8 (not run yet; <= 560 s).
# (The 2026-12-03 / 2026-12-04 registrations named below are archived since session 60:
# tar -xJf calibration/predictions/multi_gpu_unrun_2026-11-30_12-04.tar.xz -C calibration/predictions.)
# Predictions registered before any such run, with h200-hgx8's shipped parameters (fitted on at
# most 2 GPUs): calibration/predictions/h200x4_a_2026-12-03.jsonl and h200x8_a_2026-12-03.jsonl (written by
# `python -m calibration.register --gpus N` with this grid). Real EP = the GPU count:
# kimi-k2,glm-5 x 256 / 1,024 / 4,096 / 8,192 tokens x uniform / zipf:1.2 / hot:0.1 x pull / push
# dispatch x push / pull combine, minibatch 2,048, 32 comm SMs (96 MoK records), beside
# nccl-torch, the graph-captured all-to-all and the GEMMs alone in the same run.
# Part a also runs the group check and the NVLink microbenchmarks (all-to-all through the switch,
# signals against the number of peers).
# Registered again in session 41 for the senders' push that copies runs (h200xN_a_2026-12-04.jsonl,
# the same grid; report both, the newer for the kernel that runs).
# Registered a third time in session 47 (h200xN_a_2026-12-05.jsonl, the same grid): its simulator
# starts a minibatch's copies across every peer at once (docs/sim-study.md "M"; MoK simulator rows
# -10 % to +2 % from the 2026-12-04 file, analytic MoK rows identical); report all.
# Report before any refit: `python -m calibration.registered calibration/predictions/h200xN_a_2026-12-03.jsonl
# calibration/runs/h200xN/bench_a.jsonl --by model,tokens`.
# Registered again in session 51 (h200xN_a_2026-12-05b.jsonl, `bash benchmarks/cpu/register_x4x8_s51.sh`):
# NCCL's channels per peer (nccl-torch passes 0.35-1.0x the earlier files' predictions), MoK as
# session 51's model; report it beside the earlier files.
# An HGX H100 box (nvidia-h100-x4 / -x8) runs the same grid; its records name h100-hgx8 and meet
# calibration/predictions/h100xN_a_2026-12-06.jsonl (benchmarks/cpu/register_h100_boxes_s59.sh).
export PYTHONPATH=.
T0=$(date +%s); N=$(nvidia-smi -L | grep -c "H100\|H200"); R=$OUT/x${N}a; mkdir -p $R
[ "$N" -ge 4 ] || { echo "needs 4 or 8 H100s or H200s, found $N"; nvidia-smi -L; exit 0; }
{ nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader; nvidia-smi topo -m; date -u; } > $R/gpu.txt 2>&1
timeout 120 python3 -m mok_kernels.group_check --gpus $N > $R/group_check.log 2>&1
echo "group_check exit $? $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
timeout 100 python3 calibration/nvlink_bench.py --gpus $N --quick --out $R/nvlink_micro.jsonl > $R/nvlink.log 2>&1
echo "nvlink exit $? $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
REM=$(( 550 - ($(date +%s) - T0) ))
timeout $REM python3 -m mok_kernels.bench --gpus $N --model kimi-k2,glm-5 --tokens 256,1024,4096,8192 \
  --routing uniform,zipf:1.2,hot:0.1 --dispatch pull,push --combine push,pull --minibatch 2048 \
  --comm-sms 32 --iters 8 --timeout 90 --out $R/bench_a.jsonl > $R/bench_a.log 2>&1
echo "bench exit $? $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
tail -n 8 $R/bench_a.log | cut -c1-200; cat $R/gpu.txt | tail -4; wc -l $R/*.jsonl
