#!/bin/bash
# Usage: [LIMIT=580] bash benchmarks/device/s69_first.sh TAG   (an H100 or H200, <= LIMIT s)
# Prepared in session 68 for the next session's first call. Everything is tarred into
# $OUT/TAG.tgz at the end (a call returns at most 8 files: session 68 lost a subfolder).
# On an H100: the H100 half of the heavy-shape tile-order test (s68_heavy_group.sh; the H200 half
#   ran in session 68), then seed 35's h100-1 registration (drawn_seed.sh 35) with the time left.
# On an H200: seed 36's registered run (h200_drawn36_*.jsonl, if registered), then the long heavy
#   GEMM phases of seeds 26 and 27 with gpu_state (more points for a phase-duration term).
TAG=${1:?tag}; LIMIT=${LIMIT:-580}; T0=$(date +%s); R=$OUT/$TAG; mkdir -p $R
export PYTHONPATH=.
left() { echo $(( LIMIT - ($(date +%s) - T0) - 25 )); }
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
if echo "$GPU" | grep -q H100; then
  LIMIT=300 bash benchmarks/device/s68_heavy_group.sh $TAG/group > $R/group_run.log 2>&1
  [ $(left) -gt 150 ] && TOTAL=$(left) bash benchmarks/device/drawn_seed.sh 35 $TAG/d35 > $R/d35_run.log 2>&1
else
  [ -e calibration/drawn_shapes/seed36 ] && TOTAL=200 bash benchmarks/device/drawn_seed.sh 36 $TAG/d36 > $R/d36_run.log 2>&1
  [ $(left) -gt 90 ] && LIMIT=$(left) SEEDS="26 27" TAG=$TAG/heavy bash benchmarks/device/s57_gemm_phases.sh > $R/heavy_run.log 2>&1
fi
{ echo "$GPU, $(( $(date +%s) - T0 )) s"; tail -n 3 $R/*.log; } > $R/summary.txt
cd $OUT && tar czf $TAG.tgz $TAG && rm -rf $TAG
tar xzOf $TAG.tgz $TAG/summary.txt
