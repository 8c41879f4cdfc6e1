#!/bin/bash
# For session 62 (either card, <= 450 s): KernelConfig.push_loop='lists' (each sender's rows of
# a minibatch copied in whole chunks from the schedule's send lists, written in session 62 on the
# CPU after 'ahead' bought nothing). 1. Its GPU tests: the bits of 'tiles' and float32 (emulated
# rank, virtual ranks, local group, FP8). 2. Only if they pass: seed 28's tiny shapes with pull,
# push 'tiles' and push 'lists' in the same run (benchmarks/narrow_diag.py), and qwen3-30b-a3b.
# Everything lands in $OUT/s62l.tgz.
export PYTHONPATH=.
T0=$(date +%s); FINAL=$OUT; export OUT=/tmp/s62l; R=$OUT/s62l; mkdir -p $R
trap 'tar -czf $FINAL/s62l.tgz -C $OUT .' EXIT
nvidia-smi --query-gpu=name --format=csv,noheader > $R/gpu.txt
timeout 220 python3 -m pytest -q -p no:cacheprovider tests/test_kernels_gpu.py -k "push_lanes_lists" \
  > $R/tests.log 2>&1
RC=$?; echo "tests rc $RC $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
if [ $RC -eq 0 ]; then
  D=calibration/drawn_shapes/seed28
  timeout 130 python3 benchmarks/narrow_diag.py --dispatch pull,push --push-loop tiles,lists \
    --routing hot:0.1 --seed 28 --comm-sms 32 --minibatch 2048 \
    --workloads $D/syn28-h2560-i256-e16-k1.toml:4:4608,$D/syn28-h2560-i448-e16-k2.toml:4:4608,$D/syn28-h2816-i384-e64-k7.toml:16:2048 \
    > $R/hot.log 2>&1
  timeout 80 python3 benchmarks/narrow_diag.py --dispatch pull,push --push-loop tiles,lists \
    --comm-sms 32 --minibatch 4096 --workloads qwen3-30b-a3b:8:4096 > $R/qwen.log 2>&1
fi
echo "done $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
cat $R/gpu.txt; tail -n 3 $R/tests.log; grep -v "never join" $R/hot.log $R/qwen.log 2>/dev/null | cut -c1-150
