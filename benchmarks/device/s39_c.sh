#!/bin/bash
# Session 39, call 4 (nvidia-h200, <= 590 s): the kernel with copy_steps as its only copy loop
# (the A/B flag removed after call 3): forward tests of every copy path against float32, then
# seed SEED's drawn shapes re-timed (benchmarks/device/drawn_seed.sh; the same plan as
# drawn14_newkernel, predictions registered first in
# calibration/predictions/h200_drawnSEED_ahead_2026-12-04.jsonl).
# Usage: bash benchmarks/device/s39_c.sh SEED
S=${1:?seed}
R=$OUT/s39c; LIMIT=200; source benchmarks/device/pytest_steps.sh
step k2 tests/test_kernels_gpu.py -x -k "megakernel_matches_reference or local_group_production or eight_virtual or hidden_sizes"
cat $R/summary.log
bash benchmarks/device/drawn_seed.sh $S s39d$S
