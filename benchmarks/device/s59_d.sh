#!/bin/bash
# Session 59 (either card, <= ${LIMIT:-460} s): correctness on random shapes of a seed offset no
# run has drawn (59000), each against float32: forward first, then local-group + FP8 + Gluon and
# backward in parallel for the time left. Everything lands in $OUT/s59d.tgz.
export PYTHONPATH=.
T0=$(date +%s); FINAL=$OUT; export OUT=/tmp/s59d; R=$OUT/rand; mkdir -p $R
trap 'tar -czf $FINAL/s59d.tgz -C $OUT .' EXIT
export MOK_RANDOM_SHAPES_SEED=59000; LIMIT=${LIMIT:-460}
{ nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader; date -u; } > $R/gpu.txt
timeout 220 python3 -m pytest -q -p no:cacheprovider tests/test_random_shapes_gpu.py -k forward > $R/fwd.log 2>&1
L=$(( LIMIT - ($(date +%s) - T0) ))
timeout $L python3 -m pytest -q -p no:cacheprovider tests/test_random_shapes_gpu.py \
  -k "local_group or fp8" > $R/group_fp8.log 2>&1 &
timeout $L python3 -m pytest -q -p no:cacheprovider tests/test_random_shapes_gpu.py \
  -k backward > $R/bwd.log 2>&1 &
wait
for f in $R/*.log; do echo "== $f"; tail -n 2 $f; done; grep -h "FAILED\|Error" $R/*.log | head
echo "s59_d $(( $(date +%s) - T0 )) s"
