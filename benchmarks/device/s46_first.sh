#!/bin/bash
# Prepared in session 45 for the next nvidia-h200 call (<= 560 s; not run yet):
# (1) seed 19's six drawn shapes, registered before the run at edda620
#     (calibration/predictions/h200_drawn19_2026-12-04.jsonl; session 45's device time ran out
#     before it; the workload.py changes after edda620 leave all 240 predictions bit for bit);
# (2) the schedule microbenchmark on the 3-launch builder (calibration/microbench.py --only
#     schedule: the records schedule_us / schedule_ns_per_route were fitted on were the 5-launch
#     builder's, ~3 us slower a pass).
# Report (1) with `python -m calibration.registered calibration/predictions/h200_drawn19_2026-12-04.jsonl
# calibration/runs/h200_drawn/drawn19.jsonl --by model,tokens` before any refit.
export PYTHONPATH=.
TOTAL=300 bash benchmarks/device/drawn_seed.sh 19 s46d19
mkdir -p $OUT/s46m
timeout 120 python3 calibration/microbench.py --only schedule --out $OUT/s46m/micro_schedule.jsonl \
  > $OUT/s46m/micro_schedule.log 2>&1
tail -n 4 $OUT/s46m/micro_schedule.log
