#!/bin/bash
# Usage: [LIMIT=560] [SEED_TOTAL=330] bash benchmarks/device/s69_second.sh TAG   (an H200, <= LIMIT s)
# Session 69: seed 37's registered run (h200_drawn37_before_s69_2026-12-07.jsonl, the shipped
# parameters, and h200_drawn37_sustain_candidate_2026-12-07.jsonl, session 69's first candidate),
# then with the time left the heavy GEMM phases of seed 37 with gpu_state. Everything is tarred
# into $OUT/TAG.tgz (a call returns at most 8 files).
TAG=${1:?tag}; LIMIT=${LIMIT:-560}; T0=$(date +%s); R=$OUT/$TAG; mkdir -p $R
export PYTHONPATH=.
left() { echo $(( LIMIT - ($(date +%s) - T0) - 25 )); }
TOTAL=${SEED_TOTAL:-330} bash benchmarks/device/drawn_seed.sh 37 $TAG/d37 > $R/d37_run.log 2>&1
[ $(left) -gt 130 ] && LIMIT=$(left) SEEDS=37 TAG=$TAG/heavy bash benchmarks/device/s57_gemm_phases.sh \
  > $R/heavy_run.log 2>&1
{ nvidia-smi --query-gpu=name --format=csv,noheader; echo "$(( $(date +%s) - T0 )) s"; tail -n 3 $R/*.log; } > $R/summary.txt
cd $OUT && tar czf $TAG.tgz $TAG && rm -rf $TAG
tar xzOf $TAG.tgz $TAG/summary.txt
