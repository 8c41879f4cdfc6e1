#!/bin/bash
# Session 26, fourth device call (nvidia-h200): the Gluon FP8 pass through MoKLayer
# (KernelConfig(precision="fp8", fp8_kernel="gluon"), integrated this session, never run).
# (1) Untimed, in parallel: its GPU tests (float32 references at kimi-k2 / glm-5 / qwen3-30b
# widths, every rank, routings with empty experts, stall, bench), the random FP8 shapes as the
# Gluon pass runs or refuses them, and the benchmark's own checks after the move into the
# package (--no-time). (2) Timed, alone: mok bench records, FP8 Gluon and BF16 Triton in the
# same run (kimi-k2, glm-5, qwen3-235b; EP 8 rank 0; 1,024 / 4,096 tokens; three routings;
# pull / push, minibatch 4,096, 24 / 32 comm SMs, capacity 1.0).
export PYTHONPATH=.
R=$OUT/s26g; mkdir -p $R
{ nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader; date -u; } > $R/gpu.txt 2>&1
T0=$(date +%s)
P="python3 -m pytest -v -p no:cacheprovider"
timeout 330 $P tests/test_gluon_fp8_gpu.py > $R/t_gluon.log 2>&1 &
timeout 330 $P tests/test_random_shapes_gpu.py -k gluon > $R/t_random_gluon.log 2>&1 &
timeout 330 python3 benchmarks/gluon_fp8_mok.py --no-time > $R/mok_check.log 2>&1 &
wait
echo "tests $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
mkdir -p calibration/runs/h200_gluon
timeout 260 python3 -m mok_kernels.bench --model kimi-k2,glm-5,qwen3-235b-a22b --ep 8 --rank 0 \
  --tokens 1024,4096 --routing uniform,zipf:1.2,hot:0.1 --precision fp8,bf16 \
  --fp8-kernel gluon --systems mok --dispatch pull --combine push --minibatch 4096 \
  --comm-sms 24,32 --capacity 1.0 --iters 10 --warmup 3 \
  --out calibration/runs/h200_gluon/fp8_gluon.jsonl > $R/bench.log 2>&1
echo "bench exit $? $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
cp calibration/runs/h200_gluon/fp8_gluon.jsonl $R/ 2>/dev/null
date -u >> $R/gpu.txt; cat $R/gpu.txt
grep -E "PASSED|FAILED|ERROR|SKIPPED" $R/t_gluon.log $R/t_random_gluon.log | sed 's/.*:://' | cut -c1-140
tail -n 3 $R/t_*.log
grep -E "FAIL|check |Error" $R/mok_check.log | sed -E 's/ \(H [^)]*\)//' | cut -c1-170
tail -n 30 $R/bench.log | cut -c1-200
