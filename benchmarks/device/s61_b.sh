#!/bin/bash
# Session 61 (an H100 or H200, <= 560 s): seed 29's registered drawn-shape run (predictions for
# both cards committed in 8d13aa7 before it), alone on the GPU, then the forward random shapes of
# a seed offset no run has drawn (61000), each against float32. Everything lands in $OUT/s61b.tgz.
export PYTHONPATH=.
T0=$(date +%s); FINAL=$OUT; export OUT=/tmp/s61b; mkdir -p $OUT/rand
trap 'tar -czf $FINAL/s61b.tgz -C $OUT .' EXIT
TOTAL=300 bash benchmarks/device/drawn_seed.sh 29 s61d29
export MOK_RANDOM_SHAPES_SEED=61000
L=$(( ${LIMIT:-550} - ($(date +%s) - T0) ))
timeout $L python3 -m pytest -q -p no:cacheprovider tests/test_random_shapes_gpu.py -k forward \
  > $OUT/rand/fwd.log 2>&1
tail -n 3 $OUT/rand/fwd.log; grep -h "FAILED\|Error" $OUT/rand/fwd.log | head
echo "s61_b $(( $(date +%s) - T0 )) s"
