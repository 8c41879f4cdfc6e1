#!/bin/bash
# Session 13, device call 6 (not completed): the autograd GPU tests on the training default
# (saved g/u, bn_a 128, bn_x 256) and FP8 reference tests. The call's wait loop used
# `pgrep -f` on a pattern that matched the call's own command line, so it never ended and the
# call hit its limit with nothing returned; the session's device time ran out. Rerun as:
export PYTHONPATH=.
timeout 250 python3 -m pytest -q -rA tests/test_autograd_gpu.py > $OUT/t_autograd.log 2>&1 &
timeout 250 python3 -m pytest -q -rA tests/test_fp8_gpu.py -k "grouped or fp8_matches_references" > $OUT/t_fp8.log 2>&1 &
wait
