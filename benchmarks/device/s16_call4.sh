#!/bin/bash
# Session 16, device call 4 (nvidia-h200, <= 400 s): split_dn chosen from the shape
# (tiles.py forward_split_dn: 4 slices for mixtral-8x7b at EP 4-8 with 64-128 tokens). Untimed,
# in parallel: the split_dn GPU tests (the new test_split_down_chosen_from_the_shape among them),
# the default path's reference tests, the randomized forward shapes, compile warm-ups. Timed,
# alone: mixtral-8x7b's 36 space workloads (predictions registered first in
# calibration/predictions/h200_mixtral_split_2026-12-01.jsonl) and their GEMM phases alone.
export PYTHONPATH=.
T0=$(date +%s); R=/tmp/s16/r4; J=/tmp/junk4; mkdir -p $R $J
{ nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader; date -u; } > $R/gpu.txt 2>&1
T="timeout 200 python3 -m pytest -q -rA tests/test_kernels_gpu.py"
$T -k "split_down" > $R/t_split.log 2>&1 &
$T -k "megakernel_matches_reference or every_model_preset_shape" > $R/t_default.log 2>&1 &
timeout 200 python3 -m pytest -q -rA tests/test_random_shapes_gpu.py -k forward > $R/t_random_fwd.log 2>&1 &
timeout 200 python3 -m mok_kernels.space_sweep --compile-only --models mixtral-8x7b > $J/c1.log 2>&1 &
timeout 200 python3 -m mok_kernels.space_sweep --compile-only --gemm-phases --models mixtral-8x7b > $J/c2.log 2>&1 &
wait
echo "tests and warm-up $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
tail -n 2 $J/c*.log > $R/warmup_tails.log 2>&1
REM=$(( 380 - ($(date +%s) - T0) ))
timeout $REM python3 -m mok_kernels.space_sweep --models mixtral-8x7b --out $R/space_mixtral.jsonl \
  --deadline-s $(( REM / 2 )) > $R/space_mixtral.log 2>&1
REM=$(( 380 - ($(date +%s) - T0) ))
timeout $REM python3 -m mok_kernels.space_sweep --models mixtral-8x7b --gemm-phases \
  --out $R/gemm_phases_mixtral.jsonl --deadline-s $(( REM - 10 )) > $R/gemm_phases_mixtral.log 2>&1
echo "end $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
tar czf $OUT/call4.tgz -C /tmp/s16 r4
