#!/bin/bash
# Usage: bash benchmarks/device/s76_combine.sh TAG   (an H200 or H100, <= 330 s)
# Session 76: where a long pass's push combine loses the ~3 % the model misses (passes over 3 ms
# read push combine 1-5 % fast at every comm-SM count, pull combine on 32-64 comm SMs 2-5 % slow:
# docs/calibration.md "Session 76"). narrow_diag with pull dispatch, push and pull combine at 8
# and 32 comm SMs: each setting's phases (copies alone, comm SMs never joining) and three traced
# passes. Everything in $OUT/TAG.tgz.
export PYTHONPATH=.
TAG=${1:?tag}
T0=$(date +%s); FINAL=$OUT; export OUT=/tmp/$TAG; R=$OUT/$TAG; mkdir -p $R
trap 'tar -czf $FINAL/$TAG.tgz -C $OUT .' EXIT
{ nvidia-smi --query-gpu=name --format=csv,noheader; date -u; git log -1 --format=%H; } > $R/gpu.txt
D=calibration/drawn_shapes
one() {   # name workload minibatch seed
  timeout 150 python3 benchmarks/narrow_diag.py --dispatch pull --combine push,pull \
    --routing uniform --seed $4 --comm-sms 8,32 --minibatch $3 --trace \
    --workloads $2 > $R/$1.log 2>&1
  echo "$1 rc $? $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
}
one syn36 $D/seed36/syn36-h6912-i2432-e32-k5.toml:8:4608 4096 36
one glm45 glm-4.5:8:4096 4096 0
cat $R/gpu.txt; grep -h "library\|MoK  \|traced" $R/*.log | cut -c1-230
