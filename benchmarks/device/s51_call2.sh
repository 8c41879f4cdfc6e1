#!/bin/bash
# Session 51, second call (nvidia-h200, <= 580 s): random shapes no run has drawn (seed offset
# 51000, forward / FP8 / backward / group / Gluon, <= 230 s, any Hopper card), then seed 20's
# registered drawn shapes alone on the GPU (s48_drawn20.sh, <= 310 s, H200 only; report with
# `python -m calibration.registered calibration/predictions/h200_drawn20_2026-12-05.jsonl
# calibration/runs/h200_drawn/drawn20.jsonl --by model,tokens` before any refit).
R=$OUT/s51rand; LIMIT=230; source benchmarks/device/pytest_steps.sh
export MOK_RANDOM_SHAPES_SEED=51000; step rand tests/test_random_shapes_gpu.py
cat $R/summary.log; grep -h "FAILED\|Error" $R/*.log | head -20
bash benchmarks/device/s48_drawn20.sh
