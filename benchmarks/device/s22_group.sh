#!/bin/bash
# Session 22 (2026-12-02), nvidia-h200, <= 300 s: random shapes in group mode (LocalGroup: each of
# 2 or 4 ranks its own launch, the cross-GPU protocol) against float32, the fixed seeds (8 cases)
# and 16 of seed offset 10000, with the existing group-mode tests beside them.
export PYTHONPATH=.
R=$OUT/s22g; mkdir -p $R
P="python3 -m pytest -v -p no:cacheprovider tests/test_random_shapes_gpu.py -k local_group"
timeout 280 $P > $R/t_random_group.log 2>&1 &
MOK_RANDOM_SHAPES_SEED=10000 MOK_RANDOM_SHAPES_COUNT=16 timeout 280 $P > $R/t_random_group_10000.log 2>&1 &
timeout 280 python3 -m pytest -v -p no:cacheprovider tests/test_kernels_gpu.py -k local_group > $R/t_group.log 2>&1 &
wait
