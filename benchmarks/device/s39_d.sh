#!/bin/bash
# Session 39, call 6 (nvidia-h200, <= 480 s): the push lanes back on their step-by-step loop
# (copy_steps measured up to 1.36x slower there in calls 4-5); the push paths' tests against
# float32, then seeds 14 and 13's drawn shapes re-timed on this kernel (registered first:
# calibration/predictions/h200_drawnSEED_ahead_2026-12-04.jsonl).
R=$OUT/s39e; LIMIT=120; source benchmarks/device/pytest_steps.sh
step k3 tests/test_kernels_gpu.py -x -k "eight_virtual or local_group_production or (megakernel_matches_reference and push)"
cat $R/summary.log
bash benchmarks/device/drawn_seed.sh 14 s39f14
bash benchmarks/device/drawn_seed.sh 13 s39f13
