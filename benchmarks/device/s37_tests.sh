#!/bin/bash
# Session 37 (nvidia-h200, <= 560 s): the GPU tests session 36's call limit left: all of
# tests/test_backward_gpu.py (78% passed in session 36 before the limit) and
# tests/test_gluon_fp8_gpu.py, on today's tree. Logs: $OUT/s37t/*.log
R=$OUT/s37t; LIMIT=560; source benchmarks/device/pytest_steps.sh
step gluon_fp8 tests/test_gluon_fp8_gpu.py
step backward tests/test_backward_gpu.py
cat $R/summary.log
grep -h "FAILED\|Error" $R/*.log | head -20
