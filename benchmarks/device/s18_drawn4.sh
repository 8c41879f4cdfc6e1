#!/bin/bash
# Prepared in session 18 (2026-12-01), when no device was lent; run it in the next session that
# has an nvidia-h200 (<= 570 s). A third set of ten drawn layer shapes (calibration/draw_shapes.py
# --seed 4: calibration/drawn_shapes/seed4/), six workloads each at token counts no fit has seen
# (192, 640, 1792, 3584), four knob settings; predictions registered with the h200-1 parameters
# refitted in session 18, before the run (calibration/predictions/h200_drawn4_2026-12-01.jsonl):
# the blind test of the in-order list's period (gemm_table.list_period). Untimed in parallel
# first: one compile warm-up process per two shapes. Timed, alone: the sweep (each output checked
# against float32 before it is timed), then the kernel's GEMM phases alone on the same workloads.
# Run in session 19 (2026-12-01) with the bench GPU tests added to the untimed parallel stage.
export PYTHONPATH=.
T0=$(date +%s); R=/tmp/s19/r1; J=/tmp/junk1; mkdir -p $R $J
{ nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader; date -u; git log -1 --oneline; } > $R/gpu.txt 2>&1
SH=$(ls calibration/drawn_shapes/seed4/*.toml | paste -sd,)
A="--shapes $SH --per-shape 6 --tokens 192,640,1792,3584"
# The bench GPU tests first (commit 8ed5e94 restructured run_grid's mok-gemm branch without a device).
timeout 240 python3 -m pytest -q -rA tests/test_kernels_gpu.py -k bench > $R/t_bench.log 2>&1 &
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
timeout $REM python3 -m mok_kernels.space_sweep $A --out $R/drawn4.jsonl \
  --deadline-s $(( REM - 70 )) > $R/drawn4.log 2>&1
echo "sweep $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
REM=$(( 560 - ($(date +%s) - T0) ))
timeout $REM python3 -m mok_kernels.space_sweep $A --gemm-phases --out $R/drawn4_gemm.jsonl \
  --deadline-s $(( REM - 10 )) > $R/drawn4_gemm.log 2>&1
echo "end $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
tar czf $OUT/drawn4.tgz -C /tmp/s19 r1
