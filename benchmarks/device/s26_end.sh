#!/bin/bash
# Session 26, last device call (nvidia-h200, <= 225 s). (1) Timed, alone: the second registered
# Gluon FP8 run (s26_gluon_reg2.sh: glm-4.5, minimax-m2, qwen3-next-80b-a3b, mixtral-8x7b;
# predictions committed before it, under the refit with fp8_gluon_copy_scale). (2) Untimed,
# with what is left: tests/test_autograd_gpu.py, whose updated default / opt-out cases have not
# run on a GPU since session 13.
export PYTHONPATH=.
T0=$(date +%s)
bash benchmarks/device/s26_gluon_reg2.sh > $OUT/reg2_tail.log 2>&1
REM=$(( 220 - ($(date +%s) - T0) ))
timeout $REM python3 -m pytest -v -p no:cacheprovider tests/test_autograd_gpu.py > $OUT/t_autograd.log 2>&1
echo "all $(( $(date +%s) - T0 )) s" >> $OUT/reg2_tail.log
tail -n 25 $OUT/reg2_tail.log | cut -c1-200
grep -E "PASSED|FAILED|ERROR" $OUT/t_autograd.log | sed 's/.*:://' | cut -c1-120; tail -n 2 $OUT/t_autograd.log
