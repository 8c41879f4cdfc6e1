#!/bin/bash
# Session 39 (nvidia-h200, <= 560 s): session 38's untested bench.time_launch refactor (the GEMM
# phases record and the skip_gemm diagnostic), then the pull copies with their index loads ahead
# (KernelConfig.copy_ahead) against today's loop: bits first, then the launch timed
# (benchmarks/device/s39_ahead.py; what the reading predicts is in mok_kernels/NOTES.md
# "Session 39", written first).
R=$OUT/s39a; LIMIT=540; source benchmarks/device/pytest_steps.sh
step phases tests/test_kernels_gpu.py -k "bench_gemm_phases or skip_gemm"
left=$(( LIMIT - ($(date +%s) - T0) ))
timeout $left python3 benchmarks/device/s39_ahead.py $R/ahead.jsonl $(( left - 60 )) > $R/ahead.log 2>&1
echo "ahead: exit $? at $(( $(date +%s) - T0 )) s" >> $R/summary.log
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader >> $R/summary.log
cat $R/summary.log; grep -h "FAILED\|Error" $R/*.log | head -20; cat $R/ahead.log | tail -40
