#!/bin/bash
# Session 52, for an nvidia-h200-x2 with little device time left (<= 330 s): the part of
# s26_x2.sh that tests rather than sweeps. (1) NCCL's all-to-all microbenchmark, one peer
# (calibration/nvlink_bench.py --only nccl; predicted before the run in docs/calibration.md
# "Session 52": 64 MiB a peer 1.01 ms, 66.4 GB/s per rank); (2) the group check across the two
# GPUs (every protocol change since 2026-12-01 ran on one GPU only); (3) the real-GPU tests.
# Fit with `python -m calibration.fit_fabric calibration/runs/h200x2/nvlink_micro_nccl.jsonl
# --out /tmp/p.json` and report its residuals against the shipped file before any refit.
export PYTHONPATH=.
T0=$(date +%s); R=$OUT/s52x; mkdir -p $R
{ nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader; nvidia-smi topo -m; date -u; } \
  > $R/gpu.txt 2>&1
[ "$(nvidia-smi -L | grep -c "H100\|H200")" -ge 2 ] || { echo "needs 2 H100s or H200s"; nvidia-smi -L; exit 0; }
timeout 70 python3 calibration/nvlink_bench.py --gpus 2 --only nccl --out $R/nvlink_micro_nccl.jsonl \
  > $R/nccl.log 2>&1
echo "nccl micro exit $? $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
timeout 110 python3 -m mok_kernels.group_check --gpus 2 > $R/group_check.log 2>&1
echo "group_check exit $? $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
REM=$(( 320 - ($(date +%s) - T0) ))
timeout $REM python3 -m pytest -v -p no:cacheprovider tests/test_kernels_gpu.py -k real_gpus \
  > $R/t_real_gpus.log 2>&1
echo "tests exit $? $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
grep "GB/s" $R/nccl.log | tail -6; tail -n 5 $R/group_check.log
grep -E "PASSED|FAILED|ERROR|passed|failed" $R/t_real_gpus.log | tail -8; tail -4 $R/gpu.txt
