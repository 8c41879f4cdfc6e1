#!/bin/bash
# Usage: [ONLY=REGEX] bash benchmarks/device/s78_trace.sh TAG   (an H100 or H200, <= 330 s;
#   ONLY: the runs whose name matches, e.g. ONLY=s28)
# Session 78: the settings the model orders the wrong way inside two held-out H100 workloads
# (mok_kernels/logs_s77/misorder_worst_h100.txt), each timed with narrow_diag's phases (GEMMs
# alone, no copies, copies alone, comm SMs never joining) and three traced passes
# (mok_kernels/trace.py: when each minibatch's rows were in, how long the items waited):
#   syn28 H 2,560 / I 448 / 16 experts top-2, EP 8 x 4,608, zipf:1.2 seed 28 (rank 0 gets 3,094
#     rows): pull / push at (4,096, 32) measured 0.172 ms, predicted 0.201; (1,024, 8) 0.219 /
#     0.174; (512, 16) 0.193 / 0.157; pull / pull (2,048, 64) 0.196 / 0.208;
#   syn37 H 6,400 / I 1,216 / 256 experts top-5 + shared, EP 16 x 640 uniform seed 37:
#     pull / push (8,192, 16) 0.517 / 0.502; push / push (1,024, 8) 0.648 / 0.501, (1,024, 16)
#     0.549; pull / push (4,096, 32) 0.483.
# Lag 1 and push dispatch's `shares` loop, as those records ran. Everything in $OUT/TAG.tgz.
export PYTHONPATH=.
TAG=${1:?tag}
T0=$(date +%s); FINAL=$OUT; export OUT=/tmp/$TAG; R=$OUT/$TAG; mkdir -p $R
trap 'tar -czf $FINAL/$TAG.tgz -C $OUT .' EXIT
{ nvidia-smi --query-gpu=name --format=csv,noheader; date -u; git log -1 --format=%H; } > $R/gpu.txt
D=calibration/drawn_shapes
one() {   # name shape ep tokens routing seed dispatch combine minibatch comm_sms
  [[ -n "$ONLY" && ! "$1" =~ $ONLY ]] && return
  LOOP=; [[ "$7" == *push* ]] && LOOP="--push-loop shares"   # push dispatch's loop only
  timeout 75 python3 benchmarks/narrow_diag.py --workloads $2:$3:$4 --routing $5 --seed $6 \
    --dispatch $7 --combine $8 --minibatch $9 --comm-sms ${10} $LOOP --trace \
    > $R/$1.log 2>&1
  echo "$1 rc $? $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
}
S28=$D/seed28/syn28-h2560-i448-e16-k2.toml
S37=$D/seed37/syn37-h6400-i1216-e256-k5-s1.toml
one s28_4096_32 $S28 8 4608 zipf:1.2 28 pull push 4096 32
one s28_1024_8 $S28 8 4608 zipf:1.2 28 pull push 1024 8
one s28_512_16 $S28 8 4608 zipf:1.2 28 pull push 512 16
one s37_8192_16 $S37 16 640 uniform 37 pull push 8192 16
one s37_1024 $S37 16 640 uniform 37 push push 1024 8,16
cat $R/gpu.txt; grep -h "library\|MoK  \|traced" $R/*.log | cut -c1-230
