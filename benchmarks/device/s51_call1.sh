#!/bin/bash
# Session 51, first call (nvidia-h200, <= 580 s): session 48's plan, not run since (no machine in
# sessions 48-50): the GPU suites after the schedule builder's SHIFT and the push lanes'
# sender_run helper (s48_check.sh, <= 410 s, any Hopper card), then the registered one-GPU
# source-order A/B (s48_rot_time.sh, <= 150 s, H200 only).
LIMIT=410 bash benchmarks/device/s48_check.sh
LIMIT=150 bash benchmarks/device/s48_rot_time.sh
