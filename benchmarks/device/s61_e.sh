#!/bin/bash
# Session 61 (an H100 or H200, <= ${LIMIT:-585} s): seed 29's registered drawn-shape run
# (predictions committed in 8d13aa7), alone on the GPU; then a push / pull diagnostic on seed
# 28's worst-read shapes (benchmarks/narrow_diag.py, hot routing); then the forward random
# shapes of seed offset 61000 (its other 48 cases passed: s61_c.sh) for the time left.
# Everything lands in $OUT/s61e.tgz.
export PYTHONPATH=.
T0=$(date +%s); FINAL=$OUT; export OUT=/tmp/s61e; mkdir -p $OUT/rand $OUT/s61d
trap 'tar -czf $FINAL/s61e.tgz -C $OUT .' EXIT
TOTAL=290 bash benchmarks/device/drawn_seed.sh 29 s61d29
D=calibration/drawn_shapes/seed28
timeout 120 python3 benchmarks/narrow_diag.py --dispatch pull,push --routing hot:0.1 --seed 28 \
  --workloads $D/syn28-h2560-i256-e16-k1.toml:4:4608,$D/syn28-h2816-i384-e64-k7.toml:16:2048 \
  --comm-sms 32 --minibatch 2048 > $OUT/s61d/hot.log 2>&1
export MOK_RANDOM_SHAPES_SEED=61000
L=$(( ${LIMIT:-585} - ($(date +%s) - T0) ))
timeout $L python3 -m pytest -q -p no:cacheprovider tests/test_random_shapes_gpu.py -k forward \
  > $OUT/rand/fwd.log 2>&1
cut -c1-170 $OUT/s61d/hot.log; tail -n 3 $OUT/rand/fwd.log; grep -h "FAILED\|Error" $OUT/rand/fwd.log | head
echo "s61_e $(( $(date +%s) - T0 )) s"
