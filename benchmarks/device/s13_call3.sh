#!/bin/bash
# Session 13, device call 3 (same warm machine): the space sweep's last workloads again (call 2's
# records did not come back: at most 8 files return, so everything now goes back as one tar),
# then the GPU tests that ran out of memory in call 1's crowd, alone.
export PYTHONPATH=.
T0=$(date +%s); R=/tmp/s13/r3; mkdir -p $R
{ date -u; git log -1 --format=%H; } > $R/gpu.txt 2>&1
timeout 120 python3 -m mok_kernels.space_sweep --skip-done calibration/runs/h200_space/space.jsonl \
  --out $R/space_rest.jsonl --deadline-s 100 > $R/space_rest.log 2>&1
echo "space rest $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
T="timeout 200 python3 -m pytest -q -rA"
$T tests/test_kernels_gpu.py -k "gemm_phases or every_model_preset or not_multiple" > $R/t_kernels.log 2>&1 &
$T tests/test_autograd_gpu.py -k "megakernel_forward_gradients_match" > $R/t_autograd.log 2>&1 &
$T tests/test_fp8_gpu.py -k "v3_to_v5_match_references and zipf" > $R/t_fp8.log 2>&1 &
wait
echo "end $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
cp /tmp/s13/*.jsonl $R/ 2>/dev/null
tar czf $OUT/call3.tgz -C /tmp/s13 r3
