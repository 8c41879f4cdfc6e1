#!/bin/bash
# Session 59 (either card, <= 330 s): seed 27's six drawn shapes, registered before any run for
# either card with the parameters shipped in session 59 (h100-1 with its H100 pass fit):
# calibration/predictions/CARD_drawn27_2026-12-06.jsonl (plan drawn27_plan_2026-12-06.jsonl).
# Everything lands in $OUT/s59c.tgz. Report with
#   python -m calibration.registered calibration/predictions/CARD_drawn27_2026-12-06.jsonl RUNS --by model,tokens
# before any refit.
FINAL=$OUT; export OUT=/tmp/s59c; mkdir -p $OUT
trap 'tar -czf $FINAL/s59c.tgz -C $OUT .' EXIT
TOTAL=${TOTAL:-310} bash benchmarks/device/drawn_seed.sh 27 s59d27
