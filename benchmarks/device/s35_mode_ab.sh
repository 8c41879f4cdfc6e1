#!/bin/bash
# Session 35 (nvidia-h200, <= ~470 s): s35_mode_probe.py as committed ("runtime"), then with the
# forward kernel's mode words PUSH_DISPATCH, PULL_COMBINE and JOIN made tl.constexpr
# ("constexpr", a sed on a copy of the tree), the same workloads in the same call; then the
# backward knob sweep (registered: calibration/predictions/h200_bwd_knobs_2026-12-03.jsonl).
export PYTHONPATH=.
R=$OUT/s35m; mkdir -p $R; T0=$(date +%s)
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo "not an H200"; exit 0; }
timeout 200 python3 benchmarks/device/s35_mode_probe.py runtime 170 > $R/runtime.log 2>&1
echo "runtime exit $? at $(( $(date +%s) - T0 )) s" >> $R/runtime.log
rm -rf /tmp/ab && mkdir /tmp/ab && cp -r mok_kernels mok_model benchmarks calibration /tmp/ab/
sed -i 's/^        PUSH_DISPATCH, PULL_COMBINE, STALL, max_spin, NO_COPY, WORK_OFF, JOIN,$/        PUSH_DISPATCH: tl.constexpr, PULL_COMBINE: tl.constexpr, STALL, max_spin, NO_COPY, WORK_OFF, JOIN: tl.constexpr,/' /tmp/ab/mok_kernels/megakernel.py
grep -c "PULL_COMBINE: tl.constexpr" /tmp/ab/mok_kernels/megakernel.py >> $R/constexpr.log
( cd /tmp/ab && timeout 200 python3 benchmarks/device/s35_mode_probe.py constexpr 170 ) >> $R/constexpr.log 2>&1
echo "constexpr exit $? at $(( $(date +%s) - T0 )) s" >> $R/constexpr.log
TRAIN="saved_gu=1,bn_a=256,a_epi=128,bn_x=256,w_direct=1,w_bf16=1"
for M in kimi-k2 glm-5; do
  LEFT=$(( 560 - ($(date +%s) - T0) )); [ $LEFT -lt 40 ] && { echo "skipped bwd $M" >> $R/bwd.log; continue; }
  timeout $LEFT python3 -m mok_kernels.bench --pass bwd --model $M --ep 8 --tokens 1024,4096 --rank 0 \
    --routing uniform --capacity 1.0 --dispatch pull --combine push --minibatch 2048,4096 \
    --comm-sms 8,16,24,32 --systems mok,gemm-only --bwd-tiles "$TRAIN" --out $R/bwd_knobs_s35.jsonl >> $R/bwd.log 2>&1
  echo "bwd $M exit $? at $(( $(date +%s) - T0 )) s" >> $R/bwd.log
done
cat $R/runtime.log $R/constexpr.log; grep -E " ms |exit|skipped|rror" $R/bwd.log | cut -c1-170
