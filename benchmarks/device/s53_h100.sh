#!/bin/bash
# Session 53 (an H100 or H200, <= 560 s): random shapes no run has drawn (seed offset 53000:
# forward / FP8 / backward / group / Gluon, <= 230 s), then seed 21's drawn shapes (registered
# before the run with h100-1's parameters: calibration/predictions/h100_drawn21_2026-12-05.jsonl;
# report with `python -m calibration.registered calibration/predictions/h100_drawn21_2026-12-05.jsonl
# calibration/runs/h100/drawn21.jsonl --by model,tokens` before any refit).
R=$OUT/s53rand; LIMIT=230; source benchmarks/device/pytest_steps.sh
export MOK_RANDOM_SHAPES_SEED=53000; step rand tests/test_random_shapes_gpu.py
cat $R/summary.log; grep -h "FAILED\|Error" $R/*.log | head -20
TOTAL=300 bash benchmarks/device/drawn_seed.sh 21 s53d21
