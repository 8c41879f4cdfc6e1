#!/bin/bash
# Usage: [LIMIT=300] bash benchmarks/device/s70_next.sh TAG   (an H200 or H100, <= LIMIT s)
# Session 70. On an H200: is the GEMM table stale? Its 1,158 points were measured on 2026-12-01/02
# with that day's kernel; the drawn seeds' phases measured since with today's kernel read +4 % (under
# 1 ms) to -5 % (7-10 ms) against it, while the drawn phases of 12-01 (seeds 2-4, that day's
# kernel) read +2 % throughout (docs/calibration.md "Session 70"). Re-time the megakernel's GEMM
# phases of four presets' table workloads (space_sweep --gemm-phases, seed 0: the table's own
# plan order) and compare workload by workload with calibration/runs/h200_space/gemm_phases.jsonl.gz.
# On an H100: seed 38's registered sweep (h100_drawn38_2026-12-07.jsonl).
# Everything is tarred into $OUT/TAG.tgz.
TAG=${1:?tag}; LIMIT=${LIMIT:-300}; T0=$(date +%s); R=$OUT/$TAG; J=/tmp/junk_$TAG; mkdir -p $R $J
export PYTHONPATH=.
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
{ nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader; date -u; git log -1 --format=%H; } > $R/gpu.txt 2>&1
if echo "$GPU" | grep -q H200; then
  M="kimi-k2 deepseek-v3 glm-5 qwen3-235b-a22b"
  for m in $M; do
    timeout $(( LIMIT / 3 )) python3 -m mok_kernels.space_sweep --gemm-phases --models $m --compile-only \
      > $J/warm_$m.log 2>&1 &
  done
  wait
  echo "warm-up $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
  nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active \
    --format=csv -lms 200 > $R/clocks.csv 2>&1 & CLOCKS=$!
  REM=$(( LIMIT - ($(date +%s) - T0) - 15 ))
  timeout $REM python3 -m mok_kernels.space_sweep --gemm-phases --models $(echo $M | tr ' ' ,) \
    --out $R/table_again.jsonl --deadline-s $(( REM - 10 )) > $R/table_again.log 2>&1
  kill $CLOCKS 2>/dev/null
  echo "timed $(( $(date +%s) - T0 )) s: $(wc -l < $R/table_again.jsonl) records" >> $R/gpu.txt
elif echo "$GPU" | grep -q H100; then
  TOTAL=$(( LIMIT - 20 )) bash benchmarks/device/drawn_seed.sh 38 $TAG/d38 > $R/d38_run.log 2>&1
else
  echo "not an H100 or H200: $GPU" >> $R/gpu.txt
fi
cat $R/gpu.txt > $R/summary.txt; tail -n 3 $R/*.log >> $R/summary.txt 2>/dev/null
cd $OUT && tar czf $TAG.tgz $TAG && rm -rf $TAG
tar xzOf $TAG.tgz $TAG/summary.txt
