#!/bin/bash
# Session 59, second call (either card, <= 580 s). On an H100: correctness on random shapes of a
# seed offset no run has drawn (59000): forward, then local-group + FP8 + Gluon, and backward, in
# parallel, each against float32. On an H200: seed 26's then seed 25's registered drawn shapes
# (calibration/predictions/h200_drawn26_2026-12-06.jsonl, h200_drawn25_2026-12-05.jsonl).
# Everything lands in $OUT/s59b.tgz.
export PYTHONPATH=.
T0=$(date +%s); FINAL=$OUT; export OUT=/tmp/s59b; mkdir -p $OUT
trap 'tar -czf $FINAL/s59b.tgz -C $OUT .' EXIT
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H100; then
  R=$OUT/rand; mkdir -p $R; export MOK_RANDOM_SHAPES_SEED=59000
  { nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader; date -u; } > $R/gpu.txt
  timeout 240 python3 -m pytest -q -p no:cacheprovider tests/test_random_shapes_gpu.py -k forward > $R/fwd.log 2>&1
  L=$(( 565 - ($(date +%s) - T0) ))
  timeout $L python3 -m pytest -q -p no:cacheprovider tests/test_random_shapes_gpu.py \
    -k "local_group or fp8" > $R/group_fp8.log 2>&1 &
  timeout $L python3 -m pytest -q -p no:cacheprovider tests/test_random_shapes_gpu.py \
    -k backward > $R/bwd.log 2>&1 &
  wait
  tail -n 2 $R/*.log; grep -h "FAILED\|Error" $R/*.log | head
else
  TOTAL=290 bash benchmarks/device/drawn_seed.sh 26 s59d26
  TOTAL=$(( 570 - ($(date +%s) - T0) )) bash benchmarks/device/drawn_seed.sh 25 s57d25
fi
echo "s59_b $(( $(date +%s) - T0 )) s"
