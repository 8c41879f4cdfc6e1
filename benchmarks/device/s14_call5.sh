#!/bin/bash
# Session 14, device call 5 (nvidia-h200, <= 480 s, untimed): the GPU test suites on the session's
# final kernel code (tma_a opt-in, gu_bf16 helper), four processes at a time.
export PYTHONPATH=.
T0=$(date +%s); R=/tmp/s14/r5; mkdir -p $R
{ nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader; date -u; } > $R/gpu.txt 2>&1
T="timeout 450 python3 -m pytest -q -rA"
$T tests/test_kernels_gpu.py tests/test_knobs_gpu.py > $R/t_kernels.log 2>&1 &
$T tests/test_backward_gpu.py > $R/t_backward.log 2>&1 &
$T tests/test_fp8_gpu.py -k "not v3_to_v5" > $R/t_fp8.log 2>&1 &
$T tests/test_autograd_gpu.py tests/test_hf.py > $R/t_autograd_hf.log 2>&1 &
wait
echo "end $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
tar czf $OUT/call5.tgz -C /tmp/s14 r5
