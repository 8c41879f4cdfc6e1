#!/bin/bash
# Session 24, second device call (nvidia-h200, <= 560 s). (1) The two random forward cases that
# failed on the served-slot 0/0 (fixed in tests/test_kernels_gpu.py), again. (2) The FP8 Gluon
# core's two-MMA form (ws2d) beside wait and ws2p (benchmarks/gluon_fp8_gemm.py). (3) Harness
# A/B: the automatic-pick sweeps (`mok bench`) read 1-4% faster than the space sweep
# (`mok_kernels.space_sweep`) on the configurations both ran; the same decode workloads at the
# space sweep's default knobs (pull / push, minibatch 4096, 32 comm SMs, capacity 1.0), under
# both harnesses, back to back, twice (A B A B). Run 2026-12-02 10:50 UTC; logs and records in
# mok_kernels/logs_s24/harness/ (the second space pass did not come back).
export PYTHONPATH=.
T0=$(date +%s); R=$OUT/s24h; mkdir -p $R
{ nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader; date -u; } > $R/gpu.txt 2>&1
MOK_RANDOM_SHAPES_SEED=20000 MOK_RANDOM_SHAPES_COUNT=36 timeout 150 python3 -m pytest -v \
  -p no:cacheprovider tests/test_random_shapes_gpu.py -k "s21007 or s21030" > $R/t_fixed.log 2>&1 &
timeout 200 python3 benchmarks/gluon_fp8_gemm.py --rows 4096,16384 --variants wait,ws2p,ws2d \
  --out $R/gluon_fp8.json > $R/gluon_fp8.log 2>&1
wait
echo "tests and fp8 $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
W="kimi-k2:16:128 deepseek-v3:32:64 minimax-m2:8:256 llama4-maverick:16:256"
for pass in 1 2; do
  for w in $W; do
    IFS=: read m ep n <<< "$w"
    timeout 120 python3 -m mok_kernels.space_sweep --models $m --eps $ep --tokens $n \
      --out $R/space_$pass.jsonl --deadline-s 100 >> $R/space.log 2>&1
    timeout 120 python3 -m mok_kernels.bench --model $m --ep $ep --tokens $n --rank 0 \
      --routing uniform,zipf:1.2,hot:0.1 --systems mok --dispatch pull --combine push \
      --minibatch 4096 --comm-sms 32 --capacity 1.0 --out $R/bench_$pass.jsonl >> $R/bench.log 2>&1
  done
  echo "pass $pass $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
done
