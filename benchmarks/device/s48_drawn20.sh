#!/bin/bash
# Session 48 (nvidia-h200, <= 320 s): seed 20's six drawn shapes, registered before the run
# (calibration/predictions/h200_drawn20_2026-12-05.jsonl, plan beside it; shipped h200-1,
# analytic and simulator). Report with `python -m calibration.registered
# calibration/predictions/h200_drawn20_2026-12-05.jsonl calibration/runs/h200_drawn/drawn20.jsonl
# --by model,tokens` before any refit.
TOTAL=300 bash benchmarks/device/drawn_seed.sh 20 s48d20
