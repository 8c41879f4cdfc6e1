#!/bin/bash
# Session 28: the SM clock under load on this GPU (run on the H200 and on the H100, same
# script). (1) benchmarks/sustained_clock.py: a 12 s dense 8192^3 BF16 GEMM load. (2) The SM
# clock and power sampled every 100 ms (nvidia-smi) while mok bench runs two seed-9 workloads
# whose records exist on both GPUs (EP 8 rank 0, 8,192 tokens, uniform, pull/push, minibatch
# 4,096, 32 comm SMs; the MoK pass and its GEMM phases alone), ITERS (40) iterations each. (3) With
# CHECKS=1 the Gluon GEMM benchmark's own checks after 527eac4's refactor (grouped, FFN) and the
# MoK pass's variant checks. Results under $OUT/s28_TAG.
export PYTHONPATH=.
TAG=${TAG:-gpu}; T0=$(date +%s); R=$OUT/s28_$TAG; mkdir -p $R
{ nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader; date -u; } > $R/gpu.txt 2>&1
timeout 60 python3 benchmarks/sustained_clock.py --seconds 12 --json $R/clock.json > $R/clock.log 2>&1
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,utilization.gpu --format=csv,noheader -lms 100 \
  > $R/smi.csv 2>&1 &
SMI=$!
for S in syn9-h7936-i2688-e32-k8 syn9-h2304-i2944-e64-k7; do
  echo "$S start $(date +%s.%N)" >> $R/gpu.txt
  timeout 150 python3 -m mok_kernels.bench --model calibration/drawn_shapes/seed9/$S.toml --ep 8 \
    --rank 0 --tokens 8192 --routing uniform --systems mok,gemm-only --dispatch pull --combine push \
    --minibatch 4096 --comm-sms 32 --capacity 1.0 --iters ${ITERS:-40} --warmup 5 --out $R/clock_bench.jsonl \
    >> $R/bench.log 2>&1
  echo "$S end $(date +%s.%N)" >> $R/gpu.txt
done
kill $SMI
python3 - $R <<'PY' >> $R/gpu.txt 2>&1
import statistics, sys
from datetime import datetime
r = sys.argv[1]
marks = [l.split() for l in open(f"{r}/gpu.txt") if l.split()[1:2] in (["start"], ["end"])]
rows = []
for line in open(f"{r}/smi.csv"):
    t, mhz, w, util = [x.strip() for x in line.split(",")]
    rows.append((datetime.strptime(t, "%Y/%m/%d %H:%M:%S.%f").timestamp(), float(mhz.split()[0]),
                 float(w.split()[0]), float(util.split()[0])))
for (name, _, t0), (_, _, t1) in zip(marks[::2], marks[1::2]):
    busy = [(m, w) for t, m, w, u in rows if float(t0) <= t <= float(t1) and u > 50]
    if busy:
        print(f"{name}: {len(busy)} busy samples, SM clock median {statistics.median(m for m, _ in busy):.0f} "
              f"MHz (p10 {sorted(m for m, _ in busy)[len(busy) // 10]:.0f}), power median "
              f"{statistics.median(w for _, w in busy):.0f} W")
PY
echo "clocks $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
if [ "${CHECKS:-0}" = 1 ]; then
  timeout 150 python3 benchmarks/gluon_fp8_gemm.py --grouped > $R/gemm_grouped.log 2>&1; echo "grouped exit $?" >> $R/gpu.txt
  timeout 150 python3 benchmarks/gluon_fp8_gemm.py --ffn > $R/gemm_ffn.log 2>&1; echo "ffn exit $?" >> $R/gpu.txt
  timeout 200 python3 benchmarks/gluon_fp8_mok.py --variants default,cu2,ys=0,qv1 --no-time \
    > $R/mok_checks.log 2>&1; echo "mok checks exit $?" >> $R/gpu.txt
  echo "checks $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
fi
tail -n 1 $R/clock.log; grep -E "ms|FAIL" $R/bench.log | cut -c1-200 | tail -6
tail -n 3 $R/gemm_*.log $R/mok_checks.log 2>/dev/null | cut -c1-200; cat $R/gpu.txt
