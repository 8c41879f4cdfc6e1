#!/bin/bash
# Usage: [S200=37] [S100=41] bash benchmarks/device/s74_one.sh TAG   (an H200 or H100, <= 560 s)
# Session 73's plan for the next card that comes (every GPU suite passed on the H100 in
# sessions 72-73, so no test step):
#   H200: the GEMM-table drift test (s70_next.sh, 250 s), then seed S200's registered sweep
#         (s70_seed.sh, 290 s). Seed 37 holds five registrations (h200_drawn37_*; the newest,
#         h200_drawn37_join1_*, with the parameters of session 73's refit); seed 39 two.
#   H100: seed S100's registered sweep (s70_seed.sh, 330 s): seed 41, registered with session
#         73's parameters (h100_drawn41_*; seed 40 ran in session 73). Seeds 40 and 41 are
#         registered for h200-1 too (S200=40 or 41).
# Each part tars its own files into $OUT/TAG_*.tgz.
TAG=${1:?tag}
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
if echo "$GPU" | grep -q H200; then
  LIMIT=250 bash benchmarks/device/s70_next.sh ${TAG}_drift
  S200=${S200:-37} TOTAL=290 bash benchmarks/device/s70_seed.sh ${TAG}_seed
elif echo "$GPU" | grep -q H100; then
  S100=${S100:-41} TOTAL=330 bash benchmarks/device/s70_seed.sh ${TAG}_seed
else
  echo "not an H100 or H200: $GPU"
fi
