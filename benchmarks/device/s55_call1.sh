#!/bin/bash
# Session 55, first call (<= 560 s): seed 23's registered sweep on whichever card comes (<= 320 s),
# then, on an H100, the tile sweep's memory fix (kimi-k2 EP 32 x 8,192, group_m 1 against 8; it
# ran out of memory in session 54 with two layers alive).
bash benchmarks/device/s55_drawn23.sh
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H100; then
  W=kimi-k2:32:8192 DEADLINE=170 bash benchmarks/device/s53_group_ab.sh
fi
