#!/bin/bash
# Session 36 (nvidia-h200, <= 560 s): the GPU tests session 35's call limit cut, on the forward
# kernel with compile-time mode words (e060615), most exposed first: group mode (its own join and
# remote rings), the FP8 forward (the same kernel with FP8 tiles), autograd (forward + saved
# gate/up), the knobs tests, then the rest of the random forward draws and the backward draws.
# Logs: $OUT/s36t/*.log
export PYTHONPATH=.
R=$OUT/s36t; mkdir -p $R; T0=$(date +%s)
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo "not an H200"; exit 0; }
git log -1 --format=%H > $R/commit.txt
run() {  # run NAME PYTEST-ARGS...: stop when under 20 s is left
  local name=$1; shift
  local left=$(( 560 - ($(date +%s) - T0) ))
  [ $left -lt 20 ] && { echo "$name: not run (no time left)" >> $R/summary.log; return; }
  timeout $left python3 -m pytest -q -p no:cacheprovider "$@" > $R/$name.log 2>&1
  echo "$name: exit $? at $(( $(date +%s) - T0 )) s: $(tail -n 1 $R/$name.log)" >> $R/summary.log
}
run group tests/test_random_shapes_gpu.py -k local_group
run fp8 tests/test_fp8_gpu.py
run autograd tests/test_autograd_gpu.py
run knobs tests/test_knobs_gpu.py
run random_fwd tests/test_random_shapes_gpu.py -k "random_shape_forward or random_shape_fp8"
run random_bwd tests/test_random_shapes_gpu.py -k random_shape_backward
cat $R/summary.log
grep -h "FAILED\|Error" $R/*.log | head -20
