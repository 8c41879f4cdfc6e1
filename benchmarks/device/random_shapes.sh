#!/bin/bash
# Usage: [LIMIT=470] bash benchmarks/device/random_shapes.sh OFFSET TAG [forward|rest|all]
# (either card, <= LIMIT s): tests/test_random_shapes_gpu.py's seeded random shapes of one seed
# offset (MOK_RANDOM_SHAPES_SEED=OFFSET), each case against float32. forward: the 24 forward
# cases (<= 220 s); rest: local group + FP8 + Gluon, and the backward, in parallel for the time
# left; all: forward, then the rest. Logs (rand/*.log, rand/gpu.txt) land in $OUT/TAG.tgz.
OFFSET=${1:?seed offset}; TAG=${2:?tag}; PARTS=${3:-all}
case $PARTS in forward|rest|all) ;; *) echo "parts $PARTS: forward, rest or all"; exit 2;; esac
export PYTHONPATH=.
T0=$(date +%s); FINAL=$OUT; export OUT=/tmp/$TAG; R=$OUT/rand; mkdir -p $R
trap 'tar -czf $FINAL/$TAG.tgz -C $OUT .' EXIT
export MOK_RANDOM_SHAPES_SEED=$OFFSET; LIMIT=${LIMIT:-470}
{ nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader; date -u; git log -1 --format=%H; } > $R/gpu.txt
T="python3 -m pytest -q -p no:cacheprovider tests/test_random_shapes_gpu.py"
if [ $PARTS != rest ]; then
  timeout 220 $T -k forward > $R/fwd.log 2>&1
fi
if [ $PARTS != forward ]; then
  L=$(( LIMIT - ($(date +%s) - T0) - 10 ))
  timeout $L $T -k "local_group or fp8" > $R/group_fp8.log 2>&1 &
  timeout $L $T -k backward > $R/bwd.log 2>&1 &
  wait
fi
for f in $R/*.log; do echo "== $f"; tail -n 2 $f; done; grep -h "FAILED\|Error" $R/*.log | head
echo "$TAG $(( $(date +%s) - T0 )) s"
