#!/bin/bash
# Prepared in session 35, not run: seeds 13 and 14's drawn shapes re-timed on the forward kernel
# with compile-time mode words (e060615; push dispatch with push combine was up to 1.4x slower
# before it). nvidia-h200, <= 2 x 310 s: run one seed a call. Predictions registered before the
# run with the parameters shipped at the end of session 35 (forward values unchanged since the
# first registration): calibration/predictions/h200_drawn13_newkernel_2026-12-03.jsonl, and 14.
# Usage: bash benchmarks/device/s36_newkernel.sh SEED   (records: $OUT/s36dSEED/drawnSEED.jsonl;
# copy to calibration/runs/h200_drawn/drawnSEED_newkernel.jsonl, then
# `python -m calibration.registered PRED RUNS --by model,tokens`)
bash benchmarks/device/drawn_seed.sh ${1:?seed: 13 or 14} s36d$1
