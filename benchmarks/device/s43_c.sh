#!/bin/bash
# Session 43, call 3 (nvidia-h200, <= 570 s): random shapes of a seed offset no run drew (43000:
# forward with dn_blocks / lag / tma_a draws, FP8 Triton and Gluon, backward, LocalGroup), five
# processes at once within 240 s; then seed 18's six drawn shapes, registered before the run
# (calibration/predictions/h200_drawn18_2026-12-04.jsonl), by drawn_seed.sh (<= 310 s).
R=$OUT/s43c; LIMIT=240; source benchmarks/device/pytest_steps.sh
export MOK_RANDOM_SHAPES_SEED=43000
T=tests/test_random_shapes_gpu.py
MOK_RANDOM_SHAPES_COUNT=30 step fwd $T -k "forward" &
step fp8 $T -k "test_random_shape_fp8" &
step gluon $T -k "gluon" &
step bwd $T -k "backward" &
step group $T -k "local_group" &
wait
cat $R/summary.log; grep -h "FAILED\|Error" $R/*.log | head -20
bash benchmarks/device/drawn_seed.sh 18 s43d18
cp $OUT/s43d18/drawn18.jsonl $OUT/drawn18.jsonl 2>/dev/null
tar -czf $OUT/s43c.tgz -C $OUT s43c s43d18
