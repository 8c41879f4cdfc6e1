#!/bin/bash
# For session 63 (either card, <= 480 s), with push_loop 'shares' the default: 1. the
# random-shape forward cases of seed offset 63000 (push cases draw tiles or shares), 2. pull,
# push 'tiles' and push 'shares' in the same run on seed 30's push settings that ran slowest
# against pull (narrow_diag, no trace). Everything lands in $OUT/s63ab.tgz.
export PYTHONPATH=.
T0=$(date +%s); FINAL=$OUT; export OUT=/tmp/s63ab; R=$OUT/s63ab; mkdir -p $R
trap 'tar -czf $FINAL/s63ab.tgz -C $OUT .' EXIT
{ nvidia-smi --query-gpu=name --format=csv,noheader; date -u; } > $R/gpu.txt
MOK_RANDOM_SHAPES_SEED=63000 timeout 250 python3 -m pytest -q -p no:cacheprovider \
  tests/test_random_shapes_gpu.py -k "forward" > $R/random.log 2>&1
echo "random rc $? $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
D=calibration/drawn_shapes/seed30
ND="python3 benchmarks/narrow_diag.py --dispatch pull,push --push-loop tiles,shares --seed 30 --iters 5"
timeout 70 $ND --routing hot:0.1 --comm-sms 16 --minibatch 1024 \
  --workloads $D/syn30-h4608-i256-e128-k4.toml:8:6144 > $R/ab1.log 2>&1
timeout 70 $ND --routing uniform --comm-sms 8 --minibatch 4096 \
  --workloads $D/syn30-h1024-i576-e128-k5-s1.toml:16:4608 > $R/ab2.log 2>&1
timeout 70 $ND --routing hot:0.1 --comm-sms 64 --minibatch 2048 \
  --workloads $D/syn30-h3072-i320-e64-k3.toml:16:4608 > $R/ab3.log 2>&1
echo "done $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
cat $R/gpu.txt; tail -n 2 $R/random.log; grep -h "MoK  \|copies alone\|library" $R/ab*.log | cut -c1-160
