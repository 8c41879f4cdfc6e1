#!/bin/bash
# Session 15, device call 4 (nvidia-h200, <= 240 s), timed runs one at a time: the copy loop's
# rate by row width and rows per step (calibration/microbench.py copy_shapes), then the GEMM
# phases of the space re-run workloads call 2 did not reach.
export PYTHONPATH=.
T0=$(date +%s); R=/tmp/s15/r4; mkdir -p $R
{ nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader; date -u; } > $R/gpu.txt 2>&1
timeout 120 python3 -m calibration.microbench --only copy_shapes --out $R/micro_copy_shapes.jsonl \
  > $R/micro_copy_shapes.log 2>&1
timeout 110 python3 -m mok_kernels.space_sweep --gemm-phases \
  --models mixtral-8x7b,llama4-maverick,gpt-oss-120b \
  --skip-done calibration/runs/h200_space/gemm_phases.jsonl --out $R/gemm_phases_redo2.jsonl \
  --deadline-s 90 > $R/gemm_phases_redo2.log 2>&1
echo "end $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
tar czf $OUT/call4.tgz -C /tmp/s15 r4
