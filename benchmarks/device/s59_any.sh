#!/bin/bash
# Session 59 (either card, <= 580 s): seed 26's registered drawn shapes on whatever card comes
# (registrations calibration/predictions/CARD_drawn26_2026-12-06.jsonl, for an H100 also
# h100_drawn26_passfit_2026-12-06.jsonl), then on an H100 seed 26's GEMM phases alone (kept out
# of fits), on an H200 seed 25's registered drawn shapes (h200_drawn25_2026-12-05.jsonl).
# Everything lands in $OUT/s59.tgz (a call brings back few files). Report each with
#   python -m calibration.registered PRED RUNS --by model,tokens
# before any refit.
export PYTHONPATH=.
T0=$(date +%s); FINAL=$OUT; export OUT=/tmp/s59out; mkdir -p $OUT
pack() { tar -czf $FINAL/s59.tgz -C $OUT . ; }
trap pack EXIT
TOTAL=300 bash benchmarks/device/drawn_seed.sh 26 s59d26
REM=$(( 570 - ($(date +%s) - T0) ))
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H100; then
  R=$OUT/s59g; mkdir -p $R
  A="--shapes $(ls calibration/drawn_shapes/seed26/*.toml | paste -sd,) --per-shape 5 --tokens 128,640,2048,4608,6144 --seed 26 --gemm-phases"
  timeout 100 python3 -m mok_kernels.space_sweep $A --compile-only > $R/warm.log 2>&1
  REM=$(( 565 - ($(date +%s) - T0) ))
  timeout $REM python3 -m mok_kernels.space_sweep $A --out $R/gemm26.jsonl --deadline-s $(( REM - 10 )) > $R/gemm26.log 2>&1
  wc -l $R/gemm26.jsonl
else
  TOTAL=$(( REM - 10 )) bash benchmarks/device/drawn_seed.sh 25 s57d25
fi
echo "s59_any $(( $(date +%s) - T0 )) s"
