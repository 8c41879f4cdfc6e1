#!/bin/bash
# Usage: [LIMIT=560] [SEED_TOTAL=330] bash benchmarks/device/s69_second.sh TAG   (an H200, <= LIMIT s)
# Session 69: seed 37's registered run (h200_drawn37_before_s69_*.jsonl, the parameters before the
# long-phase refit, and h200_drawn37_2026-12-07.jsonl, after), then with the time left the FP8 GPU
# suite (tests/test_fp8_gpu.py, not run since session 64's host-side layer checks). Everything is
# tarred into $OUT/TAG.tgz (a call returns at most 8 files).
TAG=${1:?tag}; LIMIT=${LIMIT:-560}; T0=$(date +%s); R=$OUT/$TAG; mkdir -p $R
export PYTHONPATH=.
left() { echo $(( LIMIT - ($(date +%s) - T0) - 25 )); }
TOTAL=${SEED_TOTAL:-330} bash benchmarks/device/drawn_seed.sh 37 $TAG/d37 > $R/d37_run.log 2>&1
[ $(left) -gt 60 ] && timeout $(left) python3 -m pytest -q -p no:cacheprovider tests/test_fp8_gpu.py \
  > $R/fp8_suite.log 2>&1
{ nvidia-smi --query-gpu=name --format=csv,noheader; echo "$(( $(date +%s) - T0 )) s"; tail -n 3 $R/*.log; } > $R/summary.txt
cd $OUT && tar czf $TAG.tgz $TAG && rm -rf $TAG
tar xzOf $TAG.tgz $TAG/summary.txt
