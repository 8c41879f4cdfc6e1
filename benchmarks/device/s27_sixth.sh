#!/bin/bash
# Session 27, sixth device call (nvidia-h200, <= 420 s). (1) Timed, alone: the Gluon FP8
# layer's knobs chosen at launch (comm_sms / minibatch unset: knobs.resolve_gluon, the refit
# model's pick among 24-64 comm programs) beside every comm-program count it may pick
# (24 / 32 / 40 / 48 / 56 / 64), on glm-4.5, minimax-m2, qwen3-235b-a22b, llama4-maverick,
# mixtral-8x7b, qwen3-next-80b-a3b, EP 8 rank 0, 1,024 / 4,096 tokens, uniform: 72 sweep runs,
# exactly benchmarks/device/s27_gluon_auto_plan.jsonl, registered first
# (calibration/predictions/h200_gluon_auto_2026-12-02.jsonl), and 12 automatic picks.
# (2) Untimed: tests/test_gluon_fp8_gpu.py after the layer's change (I padding ran in
# s27_second.sh; the knob choice is new).
export PYTHONPATH=.
T0=$(date +%s); R=$OUT/s27f; mkdir -p $R calibration/runs/h200_gluon
{ nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader; date -u; } > $R/gpu.txt 2>&1
timeout 260 python3 -m mok_kernels.bench \
  --model glm-4.5,minimax-m2,qwen3-235b-a22b,llama4-maverick,mixtral-8x7b,qwen3-next-80b-a3b \
  --ep 8 --rank 0 --tokens 1024,4096 --routing uniform --precision fp8 --fp8-kernel gluon \
  --systems mok --dispatch pull --combine push --minibatch 4096 --comm-sms 24,32,40,48,56,64 \
  --capacity 1.0 --iters 10 --warmup 3 --auto \
  --out calibration/runs/h200_gluon/auto.jsonl > $R/bench.log 2>&1
echo "bench exit $? $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
cp calibration/runs/h200_gluon/auto.jsonl $R/ 2>/dev/null
timeout 140 python3 -m pytest -v -p no:cacheprovider tests/test_gluon_fp8_gpu.py > $R/t_gluon.log 2>&1
echo "tests $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
grep -iE "auto|FAIL" $R/bench.log | cut -c1-220; tail -n 3 $R/t_gluon.log; grep -E "FAILED|ERROR" $R/t_gluon.log | head
cat $R/gpu.txt
