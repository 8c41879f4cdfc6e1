#!/bin/bash
# Issue 15, part c, prepared in session 46 for the first nvidia-h200-x4 or -x8 (not run yet; <= 560 s).
# (The 2026-12-03 / 2026-12-04 registrations named below are archived since session 60:
# tar -xJf calibration/predictions/multi_gpu_unrun_2026-11-30_12-04.tar.xz -C calibration/predictions.)
# Where the two engines part: narrow experts whose exchanges outlast their GEMMs, so each GPU's
# link ports carry the dispatch and the combine at once (docs/sim-study.md "K"); the simulator
# reads these passes 4-29% slower than the analytic model. Registered before any such run, both
# engines, h200-hgx8's shipped parameters: calibration/predictions/h200x4_c_2026-12-04.jsonl and
# h200x8_c_2026-12-04.jsonl (`python -m calibration.register --gpus N` with this grid):
# qwen3-30b-a3b,qwen3-next-80b-a3b x 1,024 / 4,096 / 8,192 tokens, uniform, pull / push dispatch,
# push combine, minibatch 2,048, 16 / 32 comm SMs (24 MoK records), beside nccl-torch, the
# graph-captured all-to-all and the GEMMs alone in the same run.
# Report before any refit: `python -m calibration.registered calibration/predictions/h200xN_c_2026-12-04.jsonl
# calibration/runs/h200xN/bench_c.jsonl --by model,tokens` (analytic and simulator rows). Session 47
# registered the same grid again with its simulator (a minibatch's copies across every peer at
# once; the analytic rows are the same): h200xN_c_2026-12-05.jsonl; report both, so the runs say
# which copy order holds on links (docs/sim-study.md "M").
# Registered again in session 51 (h200xN_c_2026-12-05b.jsonl, `bash benchmarks/cpu/register_x4x8_s51.sh`):
# NCCL's channels per peer (nccl-torch passes 0.35-1.0x the earlier files' predictions), MoK as
# session 51's model; report it beside the earlier files.
# An HGX H100 box (nvidia-h100-x4 / -x8) runs the same grid; its records name h100-hgx8 and meet
# calibration/predictions/h100xN_c_2026-12-06.jsonl (benchmarks/cpu/register_h100_boxes_s59.sh).
export PYTHONPATH=.
T0=$(date +%s); N=$(nvidia-smi -L | grep -c "H100\|H200"); R=$OUT/x${N}c; mkdir -p $R
[ "$N" -ge 4 ] || { echo "needs 4 or 8 H100s or H200s, found $N"; nvidia-smi -L; exit 0; }
{ nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader; nvidia-smi topo -m; date -u; } > $R/gpu.txt 2>&1
REM=$(( 550 - ($(date +%s) - T0) ))
timeout $REM python3 -m mok_kernels.bench --gpus $N --model qwen3-30b-a3b,qwen3-next-80b-a3b \
  --tokens 1024,4096,8192 --routing uniform --dispatch pull,push --combine push --minibatch 2048 \
  --comm-sms 16,32 --iters 8 --timeout 90 --out $R/bench_c.jsonl > $R/bench_c.log 2>&1
echo "bench exit $? $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
tail -n 8 $R/bench_c.log | cut -c1-200; cat $R/gpu.txt | tail -4; wc -l $R/*.jsonl
