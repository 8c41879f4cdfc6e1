#!/bin/bash
# Session 26, first device call (nvidia-h200, <= 560 s). (1) Timed, alone: the Gluon FP8 MoK
# pass diagnostics prepared in session 25 (s25_fp8_mok2.sh). (2) Untimed, in parallel: the
# group-mode changes of session 25 that never ran on a GPU (collective check(), both error words
# zeroed, LocalGroup checks every rank before raising): the LocalGroup suite and the overflow /
# trap / stall tests.
export PYTHONPATH=.
T0=$(date +%s); R=$OUT/s26a; mkdir -p $R
bash benchmarks/device/s25_fp8_mok2.sh > $R/fp8_mok2_tail.log 2>&1
cp -r $OUT/s25m2 $R/ 2>/dev/null
echo "fp8 mok2 $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
P="python3 -m pytest -v -p no:cacheprovider"
timeout 300 $P tests/test_kernels_gpu.py -k "local_group" > $R/t_local_group.log 2>&1 &
timeout 300 $P tests/test_kernels_gpu.py -k "overflow or trap or stall" > $R/t_overflow.log 2>&1 &
wait
echo "tests $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
cat $R/fp8_mok2_tail.log
grep -E "PASSED|FAILED|ERROR" $R/t_local_group.log $R/t_overflow.log | sed 's/.*:://' | cut -c1-150
tail -n 2 $R/t_*.log; cat $R/gpu.txt
