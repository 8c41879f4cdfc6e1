#!/bin/bash
# Session 15, device calls 4 and 5 (nvidia-h200, <= 120 s): the copy loop's rate by row width and
# rows per step (calibration/microbench.py copy_shapes). Call 4 stopped at an illegal address
# (the benchmark's copy did not mask the last chunk of a row whose width is not a multiple of
# 1024; fixed) and its second step found every re-run workload's GEMM phases already recorded.
export PYTHONPATH=.
T0=$(date +%s); R=/tmp/s15/r5; mkdir -p $R
{ nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader; date -u; } > $R/gpu.txt 2>&1
timeout 120 python3 -m calibration.microbench --only copy_shapes --out $R/micro_copy_shapes.jsonl \
  > $R/micro_copy_shapes.log 2>&1
echo "end $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
tar czf $OUT/call5.tgz -C /tmp/s15 r5
