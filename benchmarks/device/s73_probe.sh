#!/bin/bash
# Usage: bash benchmarks/device/s73_probe.sh TAG   (an H200 or H100, <= 330 s)
# Session 73, one call with what is left of the device time.
#   H200: seed 37's registered sweep (s70_seed.sh, TOTAL 290: four registrations).
#   H100: a pass against its comm SMs where the GEMM phase mechanism steps: syn39-h6400-i5440
#         EP 4 x 128 tokens, hot (seed 39's 35.8 % miss at 64 comm SMs): narrow_diag, pull
#         dispatch, 4,096 rows, comm SMs 2-64, each with its comm SMs joining and never joining
#         (the GEMMs on 130 down to 68 SMs).
# Everything in $OUT/TAG*.tgz.
export PYTHONPATH=.
TAG=${1:?tag}
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
if echo "$GPU" | grep -q H200; then
  S200=37 TOTAL=290 bash benchmarks/device/s70_seed.sh ${TAG}_seed
else
  R=$OUT/$TAG; mkdir -p $R
  { echo "$GPU"; date -u; git log -1 --format=%H; } > $R/gpu.txt
  timeout 250 python3 benchmarks/narrow_diag.py --dispatch pull --routing hot:0.1 --seed 39 \
    --comm-sms 2,4,8,16,32,48,64 --minibatch 4096 \
    --workloads calibration/drawn_shapes/seed39/syn39-h6400-i5440-e8-k2.toml:4:128 > $R/steps.log 2>&1
  echo "rc $?" >> $R/gpu.txt
  cat $R/gpu.txt; cut -c1-200 $R/steps.log
  cd $OUT && tar czf $TAG.tgz $TAG && rm -rf $TAG
fi
