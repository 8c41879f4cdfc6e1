#!/bin/bash
# Usage: [LIMIT=580] bash benchmarks/device/s68_first.sh TAG   (an H100 or H200, <= LIMIT s)
# Prepared in session 67 for the next session's first call, so that one start does the most:
# 1. seed 35's registered drawn-shape run (drawn_seed.sh 35, <= 300 s; registrations
#    calibration/predictions/h{100,200}_drawn35_2026-12-06.jsonl);
# 2. the first GPU check of the records' gpu_state (session 67, not yet run on a GPU): how many
#    of seed 35's records carry it, its clocks and throttle reasons, the sweep's time;
# 3. with the time left: on an H200, the heavy shapes' GEMM phases with clocks.csv (seeds 25, 28
#    and 33: does the H200 throttle at them as the H100 does?); on an H100, offset 64000's last
#    two random-shape cases (mok_kernels/NOTES.md "Session 67").
# Everything lands under $OUT/TAG (drawn35.jsonl, logs, gpu_state.txt, summary.txt).
TAG=${1:?tag}; LIMIT=${LIMIT:-580}; T0=$(date +%s); R=$OUT/$TAG; mkdir -p $R
export PYTHONPATH=.
TOTAL=300 bash benchmarks/device/drawn_seed.sh 35 $TAG > $R/drawn35_run.log 2>&1
python3 - $R/drawn35.jsonl > $R/gpu_state.txt 2>&1 <<'EOF'
import collections, json, statistics, sys
recs = [json.loads(line) for line in open(sys.argv[1])]
with_state = [r["gpu_state"] for r in recs if "gpu_state" in r]
print(f"{len(with_state)} of {len(recs)} records carry gpu_state")
if with_state:
    sm = [s["sm_mhz"] for s in with_state if "sm_mhz" in s]
    pw = [s["power_w"] for s in with_state if "power_w" in s]
    print(f"sm_mhz median {statistics.median(sm) if sm else 'none'} min {min(sm, default='none')}; "
          f"power_w median {statistics.median(pw) if pw else 'none'} max {max(pw, default='none')}")
    print("throttle reasons:", dict(collections.Counter(t for s in with_state for t in s.get("throttle", []))))
    print("first:", with_state[0])
EOF
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
REM=$(( LIMIT - ($(date +%s) - T0) - 10 ))
if echo "$GPU" | grep -q H200; then
  [ $REM -gt 60 ] && LIMIT=$REM SEEDS="25 28 33" TAG=$TAG/heavy bash benchmarks/device/s57_gemm_phases.sh > $R/heavy.log 2>&1
else
  [ $REM -gt 60 ] && MOK_RANDOM_SHAPES_SEED=64000 timeout $REM python3 -m pytest -q -p no:cacheprovider \
    "tests/test_random_shapes_gpu.py::test_random_shape_gluon_fp8[s69006-ep8-r6-E16-H4224-I384-S0-n295-k1-onehot-pull-push-mb200-ring1024-gm8-dnb1]" \
    "tests/test_random_shapes_gpu.py::test_random_shape_gluon_fp8[s69007-ep2-r1-E2-H5504-I640-S0-n539-k2-onehot-pull-push-mb128-ring131072-gm8-dnb2]" \
    > $R/rand64000_last2.log 2>&1
fi
{ echo "$GPU, $(( $(date +%s) - T0 )) s"; tail -n 3 $R/drawn35_run.log; cat $R/gpu_state.txt
  tail -n 2 $R/heavy.log $R/rand64000_last2.log 2>/dev/null; } > $R/summary.txt
cat $R/summary.txt
