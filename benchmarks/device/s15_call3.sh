#!/bin/bash
# Session 15, device call 3 (nvidia-h200, <= 540 s). Untimed, in parallel: the randomized-shape
# GPU tests split three ways (call 2 ran 45 of 64 before its timeout). Then timed, alone: the
# narrow presets' knob space with the automatic pick beside it (predictions registered in
# calibration/predictions/h200_narrow_knobs_2026-12-01.jsonl before this run).
export PYTHONPATH=.
T0=$(date +%s); R=/tmp/s15/r3; J=/tmp/junk3; mkdir -p $R $J
{ nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader; date -u; } > $R/gpu.txt 2>&1
T="timeout 330 python3 -m pytest -q -rA --durations=3 tests/test_random_shapes_gpu.py"
$T -k forward > $R/t_random_fwd.log 2>&1 &
$T -k fp8 > $R/t_random_fp8.log 2>&1 &
$T -k backward > $R/t_random_bwd.log 2>&1 &
B="python3 -m mok_kernels.bench --ep 8,16 --model qwen3-30b-a3b,qwen3-next-80b-a3b --tokens 1024,4096 --routing uniform --dispatch pull --combine push,pull --minibatch 1024,2048,4096 --comm-sms 16,24,32,48 --capacity 1.0 --systems mok,gemm-only"
for m in qwen3-30b-a3b qwen3-next-80b-a3b; do   # compile warm-up: both combines, comm SMs % 16 = 0 and not
  timeout 300 $B --iters 1 --warmup 0 --model $m --tokens 1024 --ep 8 --minibatch 1024 \
    --comm-sms 16,24 --out $J/w_$m.jsonl > $J/w_$m.log 2>&1 &
done
wait
echo "tests $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
REM=$(( 530 - ($(date +%s) - T0) ))
timeout $REM $B --auto --out $R/narrow_knobs.jsonl > $R/narrow_knobs.log 2>&1
echo "end $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
tar czf $OUT/call3.tgz -C /tmp/s15 r3
