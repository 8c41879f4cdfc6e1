#!/bin/bash
# Session 38 (nvidia-h200, <= 580 s): the megakernel's own copies alone and beside its GEMMs
# (KernelConfig.skip_gemm, benchmarks/copy_beside_gemm.py; what the readings predict is in
# mok_kernels/NOTES.md "Session 38", written first). The new skip_gemm GPU test and the forward's
# reference / bit tests of tests/test_kernels_gpu.py first (the kernel gained a constexpr).
R=$OUT/s38c; LIMIT=580; source benchmarks/device/pytest_steps.sh
step skip_gemm tests/test_kernels_gpu.py -k "skip_gemm or matches_reference"
D=calibration/drawn_shapes
run_grid() {  # run_grid NAME ARGS...: one workload's grid, under the time left
  local name=$1; shift
  local left=$(( LIMIT - ($(date +%s) - T0) ))
  [ $left -lt 30 ] && { echo "$name: not run (no time left)" >> $R/summary.log; return; }
  timeout $left python3 benchmarks/copy_beside_gemm.py --out $R/copy_beside_gemm.jsonl "$@" \
    > $R/$name.log 2>&1
  echo "$name: exit $? at $(( $(date +%s) - T0 )) s" >> $R/summary.log
}
run_grid regret14 --workloads $D/seed14/syn14-h3328-i1280-e256-k7-s1.toml:16:6144 --seed 14 \
  --combine push,pull --minibatch 4096,16384 --comm-sms 6,8,12,16
run_grid wide13 --workloads $D/seed13/syn13-h3072-i4608-e8-k2-s1.toml:8:2048 --seed 13 \
  --combine push,pull --minibatch 1024,4096 --comm-sms 8,16,32
run_grid kimi --workloads kimi-k2:16:4096 --combine push,pull --comm-sms 8,16,32
run_grid narrow13 --workloads $D/seed13/syn13-h4352-i384-e160-k10.toml:4:6144 --seed 13 \
  --combine push,pull --comm-sms 8,16,32
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader >> $R/summary.log
cat $R/summary.log; grep -h "FAILED\|Error" $R/*.log | head -20
cat $R/regret14.log $R/wide13.log $R/kimi.log $R/narrow13.log
