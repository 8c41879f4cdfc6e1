#!/bin/bash
# Session 61 (either card, <= ${LIMIT:-470} s): the rest of seed offset 61000's random shapes
# (its forward half: s61_e.sh): local-group + FP8 + Gluon, and the backward,
# in parallel, each against float32. Everything lands in $OUT/s61c.tgz.
export PYTHONPATH=.
T0=$(date +%s); FINAL=$OUT; export OUT=/tmp/s61c; R=$OUT/rand; mkdir -p $R
trap 'tar -czf $FINAL/s61c.tgz -C $OUT .' EXIT
export MOK_RANDOM_SHAPES_SEED=61000; LIMIT=${LIMIT:-470}
{ nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader; date -u; git log -1 --format=%H; } > $R/gpu.txt
L=$(( LIMIT - ($(date +%s) - T0) - 10 ))
timeout $L python3 -m pytest -q -p no:cacheprovider tests/test_random_shapes_gpu.py \
  -k "local_group or fp8" > $R/group_fp8.log 2>&1 &
timeout $L python3 -m pytest -q -p no:cacheprovider tests/test_random_shapes_gpu.py \
  -k backward > $R/bwd.log 2>&1 &
wait
for f in $R/*.log; do echo "== $f"; tail -n 2 $f; done; grep -h "FAILED\|Error" $R/*.log | head
echo "s61_c $(( $(date +%s) - T0 )) s"
