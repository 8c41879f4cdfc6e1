#!/bin/bash
# Session 27, third device call (nvidia-h200, <= 540 s). (1) Timed, alone: the Gluon FP8 pass
# beside the Triton BF16 megakernel on the six seed-9 drawn shapes (four with I not a multiple
# of 128, zero-padded by the pass): EP 8 rank 0, 1,024 / 4,096 tokens, uniform / hot:0.1,
# pull / push, minibatch 4,096, 24 / 32 comm SMs, capacity 1.0; 96 runs, exactly the plan
# benchmarks/device/s27_gluon_drawn9_plan.jsonl whose predictions were registered first
# (calibration/predictions/h200_gluon_drawn9_2026-12-02.jsonl). (2) Untimed, in parallel:
# random shapes of seed offset 27500 (forward BF16, Triton FP8, backward, group mode) and the
# ten Gluon draws of that offset that s27_second.sh's time limit cut.
export PYTHONPATH=.
T0=$(date +%s); R=$OUT/s27c; mkdir -p $R calibration/runs/h200_gluon
{ nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader; date -u; } > $R/gpu.txt 2>&1
M=$(ls calibration/drawn_shapes/seed9/*.toml | paste -sd,)
timeout 250 python3 -m mok_kernels.bench --model $M --ep 8 --rank 0 \
  --tokens 1024,4096 --routing uniform,hot:0.1 --precision fp8,bf16 \
  --fp8-kernel gluon --systems mok --dispatch pull --combine push --minibatch 4096 \
  --comm-sms 24,32 --capacity 1.0 --iters 10 --warmup 3 \
  --out calibration/runs/h200_gluon/drawn9.jsonl > $R/bench.log 2>&1
echo "bench exit $? $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
cp calibration/runs/h200_gluon/drawn9.jsonl $R/ 2>/dev/null
P="python3 -m pytest -v -p no:cacheprovider tests/test_random_shapes_gpu.py"
export MOK_RANDOM_SHAPES_SEED=27500
MOK_RANDOM_SHAPES_COUNT=16 timeout 270 $P -k forward > $R/t_random_fwd.log 2>&1 &
MOK_RANDOM_SHAPES_COUNT=8 timeout 270 $P -k "fp8 and not gluon" > $R/t_random_fp8.log 2>&1 &
MOK_RANDOM_SHAPES_COUNT=6 timeout 270 $P -k backward > $R/t_random_bwd.log 2>&1 &
MOK_RANDOM_SHAPES_COUNT=8 timeout 270 $P -k local_group > $R/t_random_group.log 2>&1 &
MOK_RANDOM_SHAPES_COUNT=16 timeout 270 $P -k "gluon and (s32506 or s32507 or s32508 or s32509 or s3251)" \
  > $R/t_random_gluon_rest.log 2>&1 &
wait
echo "tests $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
tail -n 3 $R/t_*.log | cut -c1-200
grep -E "FAILED|ERROR" $R/t_*.log | cut -c1-200 | head
tail -n 12 $R/bench.log | cut -c1-200; cat $R/gpu.txt
