#!/bin/bash
# Session 27, first device call (nvidia-h200, <= 560 s). (1) Timed, alone: the opt-in qv1 copy
# of the Gluon FP8 pass (s27_fp8_qv.sh, prepared in session 26, never run). (2) Untimed, in
# parallel: the Gluon layer tests after session 26's host-side change (SM count read once at
# construction), and the whole autograd file (10 of its 16 cases ran in session 26).
export PYTHONPATH=.
T0=$(date +%s); R=$OUT/s27a; mkdir -p $R
bash benchmarks/device/s27_fp8_qv.sh > $R/qv_tail.log 2>&1
cp -r $OUT/s27qv $R/ 2>/dev/null
echo "qv $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
P="python3 -m pytest -v -p no:cacheprovider"
timeout 300 $P tests/test_gluon_fp8_gpu.py > $R/t_gluon.log 2>&1 &
timeout 300 $P tests/test_autograd_gpu.py > $R/t_autograd.log 2>&1 &
wait
echo "tests $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
cat $R/qv_tail.log
grep -E "PASSED|FAILED|ERROR" $R/t_gluon.log $R/t_autograd.log | sed 's/.*:://' | cut -c1-150
tail -n 2 $R/t_*.log; cat $R/gpu.txt
