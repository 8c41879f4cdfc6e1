#!/bin/bash
# Usage: bash benchmarks/device/s72_one.sh TAG   (an H200 or H100, about 560 s)
# Session 72: one call for what waits on a card.
#   H200: the GEMM-table drift test (s70_next.sh, 250 s: four presets' table workloads re-timed
#         with today's kernel), then seed 37's registered sweep (s70_seed.sh, 290 s: four
#         registrations, h200_drawn37_*_2026-12-07.jsonl; `monotone` is the parameters shipped
#         in session 72).
#   H100: seed 39's registered sweep (s70_seed.sh with S100=39, 330 s: h100_drawn39_2026-12-07
#         .jsonl, the parameters shipped in session 72), then the GPU kernel tests from case 119
#         on (s65_gpu_suite.sh, 200 s; 1-118 and 124-145 passed in session 72).
# Each part tars its own files into $OUT/TAG_*.tgz.
TAG=${1:?tag}
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
if echo "$GPU" | grep -q H200; then
  LIMIT=250 bash benchmarks/device/s70_next.sh ${TAG}_drift
  TOTAL=290 bash benchmarks/device/s70_seed.sh ${TAG}_seed
elif echo "$GPU" | grep -q H100; then
  S100=39 TOTAL=330 bash benchmarks/device/s70_seed.sh ${TAG}_seed
  LIMIT=200 FROM=119 STEPS="kernels" bash benchmarks/device/s65_gpu_suite.sh ${TAG}_gpu
  cd $OUT && tar czf ${TAG}_gpu.tgz ${TAG}_gpu && rm -rf ${TAG}_gpu
else
  echo "not an H100 or H200: $GPU"
fi
