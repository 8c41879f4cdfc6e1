#!/bin/bash
# Session 14, device call 1 (nvidia-h200, <= 420 s, untimed): the autograd GPU tests of the
# training default (saved g/u) that session 13's call 6 never finished, and the new randomized
# shape tests (tests/test_random_shapes_gpu.py: forward BF16, FP8, backward recompute and saved).
export PYTHONPATH=.
T0=$(date +%s); R=/tmp/s14/r1; mkdir -p $R
{ nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader; date -u; } > $R/gpu.txt 2>&1
T="timeout 400 python3 -m pytest -q -rA --durations=5"
$T tests/test_autograd_gpu.py > $R/t_autograd.log 2>&1 &
$T tests/test_random_shapes_gpu.py -k forward > $R/t_random_fwd.log 2>&1 &
$T tests/test_random_shapes_gpu.py -k fp8 > $R/t_random_fp8.log 2>&1 &
$T tests/test_random_shapes_gpu.py -k backward > $R/t_random_bwd.log 2>&1 &
wait
echo "end $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
tar czf $OUT/call1.tgz -C /tmp/s14 r1
