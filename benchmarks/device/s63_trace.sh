#!/bin/bash
# For session 63 (either card, <= 420 s): KernelConfig.trace's first GPU run, then where push
# dispatch's fixed 0.05-0.07 ms goes (session 62: the same at 8-64 comm SMs on seed 28's tiny
# shape). 1. The trace tests (tests/test_kernels_gpu.py -k trace_stamps: float32, the untraced
# bits, stamps in order, every item once). 2. Only if they pass: narrow_diag --trace, pull and
# push, on that shape and on qwen3-30b-a3b: each setting's timings, then three traced passes
# (when each minibatch's rows were in, how long items waited). Everything in $OUT/s63t.tgz.
export PYTHONPATH=.
T0=$(date +%s); FINAL=$OUT; export OUT=/tmp/s63t; R=$OUT/s63t; mkdir -p $R
trap 'tar -czf $FINAL/s63t.tgz -C $OUT .' EXIT
{ nvidia-smi --query-gpu=name --format=csv,noheader; date -u; git log -1 --format=%H; } > $R/gpu.txt
timeout 200 python3 -m pytest -q -p no:cacheprovider tests/test_kernels_gpu.py -k "trace_stamps" \
  > $R/tests.log 2>&1
RC=$?; echo "tests rc $RC $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
if [ $RC -eq 0 ]; then
  D=calibration/drawn_shapes/seed28
  timeout 90 python3 benchmarks/narrow_diag.py --dispatch pull,push --routing hot:0.1 --seed 28 \
    --comm-sms 32 --minibatch 2048 --trace --workloads $D/syn28-h2560-i256-e16-k1.toml:4:4608 \
    > $R/tiny.log 2>&1
  timeout 90 python3 benchmarks/narrow_diag.py --dispatch pull,push --comm-sms 32 --minibatch 4096 \
    --trace --workloads qwen3-30b-a3b:8:4096 > $R/qwen.log 2>&1
fi
echo "done $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
cat $R/gpu.txt; tail -n 3 $R/tests.log; grep -h "MoK  \|traced" $R/tiny.log $R/qwen.log 2>/dev/null | cut -c1-230
