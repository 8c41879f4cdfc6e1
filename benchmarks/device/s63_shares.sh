#!/bin/bash
# For session 63 (either card, <= 480 s): KernelConfig.push_loop='shares' (written after the
# trace of s63_trace.sh showed the 'tiles' lanes uneven: a sender's runs sit at the same place
# in every expert's tiles, so every nsub-th tile gives some lanes all of them and others none).
# 1. Its GPU tests (the bits of 'tiles' and float32: emulated rank, virtual ranks, local group,
# FP8, rotated sources, 64-row tiles, minibatches of more tiles than a lane loads at once).
# 2. Only if they pass: pull, push 'tiles' and push 'shares' in the same run, traced, on seed
# 28's tiny shape and its EP 16 shape (hot:0.1) and on qwen3-30b-a3b (uniform).
# 3. The random-shape forward cases of seed offset 63000 (push cases draw the loop).
# Everything lands in $OUT/s63s.tgz.
export PYTHONPATH=.
T0=$(date +%s); FINAL=$OUT; export OUT=/tmp/s63s; R=$OUT/s63s; mkdir -p $R
trap 'tar -czf $FINAL/s63s.tgz -C $OUT .' EXIT
{ nvidia-smi --query-gpu=name --format=csv,noheader; date -u; } > $R/gpu.txt
timeout 220 python3 -m pytest -q -p no:cacheprovider tests/test_kernels_gpu.py -k "push_lanes_shares" \
  > $R/tests.log 2>&1
RC=$?; echo "tests rc $RC $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
if [ $RC -eq 0 ]; then
  D=calibration/drawn_shapes/seed28
  timeout 150 python3 benchmarks/narrow_diag.py --dispatch pull,push --push-loop tiles,shares \
    --routing hot:0.1 --seed 28 --comm-sms 32 --minibatch 2048 --trace \
    --workloads $D/syn28-h2560-i256-e16-k1.toml:4:4608,$D/syn28-h2816-i384-e64-k7.toml:16:2048 \
    > $R/hot.log 2>&1
  timeout 90 python3 benchmarks/narrow_diag.py --dispatch pull,push --push-loop tiles,shares \
    --comm-sms 32 --minibatch 4096 --trace --workloads qwen3-30b-a3b:8:4096 > $R/qwen.log 2>&1
  echo "timed $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
  MOK_RANDOM_SHAPES_SEED=63000 timeout $(( 470 - $(date +%s) + T0 )) python3 -m pytest -q \
    -p no:cacheprovider tests/test_random_shapes_gpu.py -k "forward" > $R/random.log 2>&1
  echo "random rc $? $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
fi
cat $R/gpu.txt; tail -n 3 $R/tests.log; tail -n 2 $R/random.log 2>/dev/null
grep -h "MoK  \|copies alone\|traced" $R/hot.log $R/qwen.log 2>/dev/null | cut -c1-200
