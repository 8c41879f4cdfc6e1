#!/bin/bash
# Prepared in session 57 (an H100 or H200, <= ${LIMIT:-230} s): the megakernel's own GEMM phases
# alone (system mok-gemm, copies skipped: space_sweep --gemm-phases) on the drawn workloads of
# seeds 22-25, the plans their pass runs used. On an H100 these are the measured points an H100
# GEMM table can be fitted on (h100-1's is transferred from h200-1): judged on the pass records of
# the same seeds, which such a fit does not read. Writes $OUT/${TAG:-s57g}/gemmSEED.jsonl and logs.
# Other seeds: SEEDS="27 28 29" TAG=s62g bash benchmarks/device/s57_gemm_phases.sh
export PYTHONPATH=.
SEEDS=${SEEDS:-22 23 24 25}; TAG=${TAG:-s57g}
T0=$(date +%s); R=$OUT/$TAG; J=/tmp/junk_$TAG; mkdir -p $R $J; LIMIT=${LIMIT:-230}
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q "H200\|H100" || { echo "not an H100 or H200"; exit 0; }
{ nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader; date -u; git log -1 --format=%H; } > $R/gpu.txt
args() { echo "--shapes $(ls calibration/drawn_shapes/seed$1/*.toml | paste -sd,) --per-shape 5 --tokens 128,640,2048,4608,6144 --seed $1 --gemm-phases"; }
for s in $SEEDS; do
  timeout $(( LIMIT / 2 )) python3 -m mok_kernels.space_sweep $(args $s) --compile-only > $J/warm$s.log 2>&1 &
done
wait
echo "warm-up $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
# SM clock, power and throttle reasons every 200 ms through the timed part (do heavy GEMMs
# run below the card's clock?): $R/clocks.csv, stopped when the timing ends
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active \
  --format=csv -lms 200 > $R/clocks.csv 2>&1 & CLOCKS=$!
for s in $SEEDS; do
  REM=$(( LIMIT - ($(date +%s) - T0) )); [ $REM -lt 20 ] && { echo "seed $s: no time left" >> $R/gpu.txt; continue; }
  timeout $REM python3 -m mok_kernels.space_sweep $(args $s) --out $R/gemm$s.jsonl \
    --deadline-s $(( REM - 10 )) > $R/gemm$s.log 2>&1
  echo "seed $s $(( $(date +%s) - T0 )) s: $(wc -l < $R/gemm$s.jsonl) records" >> $R/gpu.txt
done
kill $CLOCKS 2>/dev/null
cat $R/gpu.txt
