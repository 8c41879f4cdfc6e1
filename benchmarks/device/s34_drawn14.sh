#!/bin/bash
# Prepared in session 33, not run: the seed-14 drawn shapes (calibration/drawn_shapes/seed14/;
# nvidia-h200, <= 310 s); predictions registered before the run with the parameters shipped after
# session 33's merges (calibration/predictions/h200_drawn14_2026-12-03.jsonl, plan beside it).
# Records: $OUT/s34d/drawn14.jsonl (copy to calibration/runs/h200_drawn/).
bash benchmarks/device/drawn_seed.sh 14 s34d
