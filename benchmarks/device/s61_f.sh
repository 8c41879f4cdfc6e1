#!/bin/bash
# Session 61 (either card, <= 150 s): seed 28's tiny shape again (push ran 1.43x pull's time
# with the same knobs in s61_e.sh), now with each dispatch's copies and signals alone
# (skip_gemm), at two minibatches. Everything lands in $OUT/s61f.tgz.
export PYTHONPATH=.
T0=$(date +%s); FINAL=$OUT; export OUT=/tmp/s61f; R=$OUT/s61f; mkdir -p $R
trap 'tar -czf $FINAL/s61f.tgz -C $OUT .' EXIT
nvidia-smi --query-gpu=name --format=csv,noheader > $R/gpu.txt
D=calibration/drawn_shapes/seed28
for MB in 2048 512; do
  timeout 65 python3 benchmarks/narrow_diag.py --dispatch pull,push --routing hot:0.1 --seed 28 \
    --workloads $D/syn28-h2560-i256-e16-k1.toml:4:4608 --comm-sms 32 --minibatch $MB \
    > $R/mb$MB.log 2>&1
done
cut -c1-150 $R/*.log; echo "s61_f $(( $(date +%s) - T0 )) s"
