#!/bin/bash
# Usage: [LIMIT=560] bash benchmarks/device/s68_heavy_group.sh TAG   (an H100 first, or an H200)
# Prepared in session 68: why do the heavy shapes' GEMM phases run 13 % slower than the GEMM table
# on an H100 (session 67, at the software power cap) while the library's GEMMs take as long on
# both cards (session 66)? If our kernel's gate/up re-reads activation row tiles per column block
# and misses L2 at large H, the tile order changes it: the MoK pass at group_m 1 / 8 / 16 and
# group_m 8 with TMA activation loads, beside the same rank's library GEMMs (gemm-only), in one
# run, with the SM clock logged. Three heavy drawn shapes and one light control (group_m 1 today).
# Writes $OUT/TAG/heavy_group.jsonl, its log, clocks.csv and gpu.txt.
TAG=${1:?tag}; LIMIT=${LIMIT:-560}; T0=$(date +%s); R=$OUT/$TAG; mkdir -p $R
export PYTHONPATH=.
{ nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader; date -u; git log -1 --format=%H; } > $R/gpu.txt 2>&1
D=calibration/drawn_shapes
W=$D/seed33/syn33-h6144-i5888-e128-k6-s1.toml:16:4608,$D/seed33/syn33-h7680-i4800-e32-k4.toml:8:4608
W=$W,$D/seed25/syn25-h7680-i6208-e128-k6-s1.toml:16:2048,$D/seed33/syn33-h4352-i768-e64-k1-s1.toml:4:4608
C=m128-g128-d256-w8-s4,m128-g128-d256-w8-s4-G8,m128-g128-d256-w8-s4-G16,m128-g128-d256-w8-s4-G8-A
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active \
  --format=csv -lms 200 > $R/clocks.csv 2>&1 & CLOCKS=$!
REM=$(( LIMIT - ($(date +%s) - T0) - 10 ))
timeout $REM python3 -m mok_kernels.tile_sweep --workloads $W --candidates $C --iters 10 --warmup 3 \
  --out $R/heavy_group.jsonl --deadline-s $(( REM - 40 )) > $R/heavy_group.log 2>&1
kill $CLOCKS 2>/dev/null
echo "done $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
cat $R/gpu.txt; cut -c1-400 $R/heavy_group.log | tail -n 12
