#!/bin/bash
# Session 48, first call (nvidia-h200, <= 560 s): the GPU suites session 47 could not rerun
# (s48_check.sh, <= 330 s), then the one-GPU source-order A/B (s48_rot_time.sh, <= 190 s).
LIMIT=330 bash benchmarks/device/s48_check.sh
LIMIT=190 bash benchmarks/device/s48_rot_time.sh
