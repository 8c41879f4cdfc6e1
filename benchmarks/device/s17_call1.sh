#!/bin/bash
# Session 17, device call 1 (nvidia-h200, <= 570 s): ten layer shapes drawn by a seeded generator
# (calibration/draw_shapes.py --seed 2: calibration/drawn_shapes/seed2/), six workloads each at
# token counts no fit has seen (96, 384, 1536, 3072, 6144), four knob settings; predictions
# registered before the run (calibration/predictions/h200_drawn2_2026-12-01.jsonl). Untimed in
# parallel first: the forward kernel's and the backward's GPU tests and one compile warm-up
# process per two shapes. Timed, alone: the sweep (each output checked against float32 before
# it is timed), then the kernel's GEMM phases alone on the same workloads.
export PYTHONPATH=.
T0=$(date +%s); R=/tmp/s17/r1; J=/tmp/junk1; mkdir -p $R $J
{ nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader; date -u; git log -1 --oneline; } > $R/gpu.txt 2>&1
SH=$(ls calibration/drawn_shapes/seed2/*.toml | paste -sd,)
A="--shapes $SH --per-shape 6 --tokens 96,384,1536,3072,6144"
python3 -m pytest --co -q tests/test_kernels_gpu.py 2>/dev/null | grep '::' > $J/ids.txt
split -n r/3 $J/ids.txt $J/shard_
for f in $J/shard_*; do
  xargs -a $f -d '\n' timeout 290 python3 -m pytest -q -rA > $R/t_kernels_${f##*_}.log 2>&1 &
done
python3 -m pytest --co -q tests/test_backward_gpu.py 2>/dev/null | grep '::' > $J/bids.txt
split -n r/2 $J/bids.txt $J/bshard_
for f in $J/bshard_*; do
  xargs -a $f -d '\n' timeout 290 python3 -m pytest -q -rA > $R/t_backward_${f##*_}.log 2>&1 &
done
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
timeout $REM python3 -m mok_kernels.space_sweep $A --out $R/drawn2.jsonl \
  --deadline-s $(( REM - 70 )) > $R/drawn2.log 2>&1
echo "sweep $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
REM=$(( 560 - ($(date +%s) - T0) ))
timeout $REM python3 -m mok_kernels.space_sweep $A --gemm-phases --out $R/drawn2_gemm.jsonl \
  --deadline-s $(( REM - 10 )) > $R/drawn2_gemm.log 2>&1
echo "end $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
tar czf $OUT/call1.tgz -C /tmp/s17 r1
