#!/bin/bash
# Session 40, call 2 (nvidia-h200, <= 560 s): copy_rows with two column steps in flight against
# one at a time (bits, then time: benchmarks/device/s40_pipe.py), beside the GPU tests call 1's
# limit left (the random backward draws) and the backward's own copies (backward.py copy_rows).
R=$OUT/s40p; LIMIT=550; source benchmarks/device/pytest_steps.sh
( timeout 330 python3 benchmarks/device/s40_pipe.py $R/pipe.jsonl 240 > $R/pipe.log 2>&1
  echo "pipe: exit $? at $(( $(date +%s) - T0 )) s" >> $R/summary.log ) &
step rbwd tests/test_random_shapes_gpu.py -k backward &
step bwd1 tests/test_backward_gpu.py -x -k "production_shapes or bits_identical" &
wait
cat $R/summary.log; grep -h "FAILED\|Error" $R/*.log | head -20; cat $R/pipe.log | tail -30
