#!/bin/bash
# Session 28, second device call (nvidia-h100-x1, <= 560 s). (1) Timed, alone: the sustained
# BF16 rate and SM clock under a 12 s GEMM load (benchmarks/sustained_clock.py); then exactly
# session 27's Gluon FP8 bench on the seed-9 shapes (benchmarks/device/s27_third.sh's command:
# 96 runs, FP8 Gluon beside BF16, EP 8 rank 0, 1,024 / 4,096 tokens), whose h100-1 predictions
# were registered first (calibration/predictions/h100_gluon_drawn9_2026-12-02.jsonl).
# (2) Then the Gluon pass's GPU tests on this GPU (tests/test_gluon_fp8_gpu.py, after the
# refactor that moved the down K loop into gluon_fp8/core.py) and the Gluon GEMM benchmark's
# own check.
export PYTHONPATH=.
T0=$(date +%s); R=$OUT/s28b; mkdir -p $R calibration/runs/h100
{ nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader; date -u; } > $R/gpu.txt 2>&1
timeout 60 python3 benchmarks/sustained_clock.py --seconds 12 --json $R/clock.json > $R/clock.log 2>&1
echo "clock $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
M=$(ls calibration/drawn_shapes/seed9/*.toml | paste -sd,)
timeout 250 python3 -m mok_kernels.bench --model $M --ep 8 --rank 0 \
  --tokens 1024,4096 --routing uniform,hot:0.1 --precision fp8,bf16 \
  --fp8-kernel gluon --systems mok --dispatch pull --combine push --minibatch 4096 \
  --comm-sms 24,32 --capacity 1.0 --iters 10 --warmup 3 \
  --out calibration/runs/h100/gluon_drawn9.jsonl > $R/bench.log 2>&1
echo "bench exit $? $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
cp calibration/runs/h100/gluon_drawn9.jsonl $R/ 2>/dev/null
REM=$(( 550 - ($(date +%s) - T0) ))
timeout $REM python3 -m pytest -v -p no:cacheprovider tests/test_gluon_fp8_gpu.py > $R/t_gluon.log 2>&1
echo "tests $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
tail -n 1 $R/clock.log; tail -n 3 $R/t_gluon.log | cut -c1-200
grep -E "FAILED|ERROR" $R/t_gluon.log | cut -c1-200 | head
tail -n 6 $R/bench.log | cut -c1-200; cat $R/gpu.txt
