#!/bin/bash
# Session 58 (either card, <= 580 s): seed 25's registered drawn shapes on whatever card comes
# (registrations calibration/predictions/CARD_drawn25_2026-12-05.jsonl; for an H100 also _h100gemm_,
# _h100gemm4_ (2026-12-05) and h100_drawn25_passfit_2026-12-06.jsonl), then
# on an H100 seeds 22-25's GEMM phases (s57_gemm_phases.sh), on an H200 seed 24's registered
# drawn shapes (h200_drawn24_2026-12-05.jsonl). Report each with
#   python -m calibration.registered PRED RUNS --by model,tokens
# before any refit.
export PYTHONPATH=.
T0=$(date +%s)
TOTAL=295 bash benchmarks/device/drawn_seed.sh 25 s57d25
REM=$(( 575 - ($(date +%s) - T0) ))
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H100; then
  LIMIT=$(( REM - 10 )) bash benchmarks/device/s57_gemm_phases.sh
else
  TOTAL=$(( REM - 15 )) bash benchmarks/device/drawn_seed.sh 24 s56d24
fi
echo "s58_any $(( $(date +%s) - T0 )) s"
