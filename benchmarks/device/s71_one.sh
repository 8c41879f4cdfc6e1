#!/bin/bash
# Usage: bash benchmarks/device/s71_one.sh TAG   (an H200 or H100, about 560 s)
# Session 71: one call for what waits on a card, since starts failed for most of the session.
#   H200: the GEMM-table drift test (s70_next.sh, 250 s: four presets' table workloads re-timed
#         with today's kernel), then seed 37's registered sweep (s70_seed.sh, 290 s: three
#         registrations, the parameters shipped before session 70, those shipped since, and
#         session 70's plus2127 candidate).
#   H100: seed 38's registered sweep (s70_seed.sh, 330 s), then the GPU kernel tests from case
#         124 on (s65_gpu_suite.sh, 200 s; cases 1-123 passed in session 70).
#   S100=N and FROM=K run another registered H100 seed and start the kernel tests at case K
#   (session 72 ran seed 38; next: S100=39 FROM=119, registered with the parameters of ea0eb1e,
#   the H200 seed 37 also as h200_drawn37_monotone_2026-12-07.jsonl).
# Each part tars its own files into $OUT/TAG_*.tgz.
TAG=${1:?tag}
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
if echo "$GPU" | grep -q H200; then
  LIMIT=250 bash benchmarks/device/s70_next.sh ${TAG}_drift
  TOTAL=290 bash benchmarks/device/s70_seed.sh ${TAG}_seed
elif echo "$GPU" | grep -q H100; then
  S100=${S100:-38} TOTAL=330 bash benchmarks/device/s70_seed.sh ${TAG}_seed
  LIMIT=200 FROM=${FROM:-124} STEPS="kernels" bash benchmarks/device/s65_gpu_suite.sh ${TAG}_gpu
  cd $OUT && tar czf ${TAG}_gpu.tgz ${TAG}_gpu && rm -rf ${TAG}_gpu
else
  echo "not an H100 or H200: $GPU"
fi
