#!/bin/bash
# Session 37 (nvidia-h200, <= 560 s): the GPU tests session 36's call limit left: all of
# tests/test_backward_gpu.py (78% passed in session 36 before the limit) and
# tests/test_gluon_fp8_gpu.py, on today's tree. Logs: $OUT/s37t/*.log
export PYTHONPATH=.
R=$OUT/s37t; mkdir -p $R; T0=$(date +%s)
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo "not an H200"; exit 0; }
git log -1 --format=%H > $R/commit.txt
run() {  # run NAME PYTEST-ARGS...: stop when under 20 s is left
  local name=$1; shift
  local left=$(( 560 - ($(date +%s) - T0) ))
  [ $left -lt 20 ] && { echo "$name: not run (no time left)" >> $R/summary.log; return; }
  timeout $left python3 -m pytest -q -p no:cacheprovider "$@" > $R/$name.log 2>&1
  echo "$name: exit $? at $(( $(date +%s) - T0 )) s: $(tail -n 1 $R/$name.log)" >> $R/summary.log
}
run gluon_fp8 tests/test_gluon_fp8_gpu.py
run backward tests/test_backward_gpu.py
cat $R/summary.log
grep -h "FAILED\|Error" $R/*.log | head -20
