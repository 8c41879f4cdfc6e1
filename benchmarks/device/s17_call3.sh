#!/bin/bash
# Session 17, device call 3 (nvidia-h200, <= 570 s): a second set of ten drawn layer shapes
# (calibration/draw_shapes.py --seed 3: calibration/drawn_shapes/seed3/), six workloads each at
# token counts no fit has seen (128, 768, 2560, 5120), four knob settings; predictions registered
# with the refitted h200-1 before the run (calibration/predictions/h200_drawn3_2026-12-01.jsonl):
# the blind test of the model changes made after seed 2's runs. Untimed in parallel first: one
# compile warm-up process per two shapes. Timed, alone: the sweep (each output checked against
# float32 before it is timed), then the kernel's GEMM phases alone on the same workloads.
export PYTHONPATH=.
T0=$(date +%s); R=/tmp/s17/r3; J=/tmp/junk3; mkdir -p $R $J
{ nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader; date -u; git log -1 --oneline; } > $R/gpu.txt 2>&1
SH=$(ls calibration/drawn_shapes/seed3/*.toml | paste -sd,)
A="--shapes $SH --per-shape 6 --tokens 128,768,2560,5120"
FILES=(${SH//,/ })
for i in 0 2 4 6 8; do
  { timeout 200 python3 -m mok_kernels.space_sweep $A --models ${FILES[$i]},${FILES[$((i+1))]} \
      --compile-only; timeout 80 python3 -m mok_kernels.space_sweep $A --gemm-phases \
      --models ${FILES[$i]},${FILES[$((i+1))]} --compile-only; } > $J/c$i.log 2>&1 &
done
wait
echo "tests and warm-up $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
tail -n 3 $J/c*.log > $R/warmup_tails.log 2>&1
REM=$(( 560 - ($(date +%s) - T0) ))
timeout $REM python3 -m mok_kernels.space_sweep $A --out $R/drawn3.jsonl \
  --deadline-s $(( REM - 70 )) > $R/drawn3.log 2>&1
echo "sweep $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
REM=$(( 560 - ($(date +%s) - T0) ))
timeout $REM python3 -m mok_kernels.space_sweep $A --gemm-phases --out $R/drawn3_gemm.jsonl \
  --deadline-s $(( REM - 10 )) > $R/drawn3_gemm.log 2>&1
echo "end $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
tar czf $OUT/call3.tgz -C /tmp/s17 r3
