#!/bin/bash
# Session 48, first call (nvidia-h200, <= 560 s): the GPU suites session 47 could not rerun
# (s48_check.sh, <= 300 s), then the one-GPU source-order A/B (s48_rot_time.sh, <= 150 s).
LIMIT=300 bash benchmarks/device/s48_check.sh
LIMIT=150 bash benchmarks/device/s48_rot_time.sh
