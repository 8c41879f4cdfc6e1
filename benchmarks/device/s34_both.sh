#!/bin/bash
# Session 34 (nvidia-h200, <= 440 s): the seed-14 drawn shapes (s34_drawn14.sh, ~215 s), then the
# training-backward sweep (s33_bwd_sweep.sh) with whatever is left of $BOTH_S (default 440) s; presets it cannot
# start are listed as skipped in $OUT/s33s/gpu.txt. Both are registered before this run.
S=$(date +%s)
bash benchmarks/device/s34_drawn14.sh
BWD_END=$(( S + ${BOTH_S:-440} )) bash benchmarks/device/s33_bwd_sweep.sh
