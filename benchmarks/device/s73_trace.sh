#!/bin/bash
# Usage: bash benchmarks/device/s73_trace.sh TAG   (an H200 or H100, <= 330 s)
# Session 73: where push dispatch's extra time goes at decode sizes and small H, on the pairs
# whose measured push/pull ratio the model misses most (mok_kernels/logs_s73/push_pairs.txt:
# syn30 H 1024 EP 8 640 tokens read 1.01, measured 1.12-1.21; syn30 H 3072 EP 4 640 tokens;
# syn34 H 3584 I 384 EP 4 2048 tokens). narrow_diag with pull and push dispatch, both push
# loops, each setting's phase timings and three traced passes (mok_kernels/trace.py).
# Everything in $OUT/TAG.tgz.
export PYTHONPATH=.
TAG=${1:?tag}
T0=$(date +%s); FINAL=$OUT; export OUT=/tmp/$TAG; R=$OUT/$TAG; mkdir -p $R
trap 'tar -czf $FINAL/$TAG.tgz -C $OUT .' EXIT
{ nvidia-smi --query-gpu=name --format=csv,noheader; date -u; git log -1 --format=%H; } > $R/gpu.txt
D=calibration/drawn_shapes
one() {   # name shape ep tokens minibatch comm_sms seed
  timeout 100 python3 benchmarks/narrow_diag.py --dispatch pull,push --push-loop shares,tiles \
    --routing uniform --seed $7 --comm-sms $6 --minibatch $5 --trace \
    --workloads $2:$3:$4 > $R/$1.log 2>&1
  echo "$1 rc $? $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
}
one h1024 $D/seed30/syn30-h1024-i576-e128-k5-s1.toml 8 640 512 64 30
one h3072 $D/seed30/syn30-h3072-i320-e64-k3.toml 4 640 4096 32 30
one h3584 $D/seed34/syn34-h3584-i384-e128-k3.toml 4 2048 4096 32 34
cat $R/gpu.txt; grep -h "library\|MoK  \|traced" $R/*.log | cut -c1-230
