#!/bin/bash
# For session 62 (either card, <= 420 s): does a 64-column gate/up block pay where the expert
# width is not a multiple of 128? The kernel pads I to whole bn_gu blocks (tiles.padded_width),
# so I = 320 runs 384 columns (20 % more GEMM work than the library's) and I = 448 runs 512;
# seed 29's syn29-h5376-i320 ran 1.29-1.55x its library GEMMs, the wide shapes 1.0-1.3x.
# mok_kernels.tile_sweep (rank 0, uniform routing; GEMMs alone and MoK per candidate, rows
# checked against float32 first) with the default tiles and the bn_gu 64 ones on the drawn
# shapes whose I % 128 != 0, and one whose I is a multiple (I 256) as the control.
# Everything lands in $OUT/s62p.tgz.
export PYTHONPATH=.
T0=$(date +%s); FINAL=$OUT; export OUT=/tmp/s62p; R=$OUT/s62p; mkdir -p $R
trap 'tar -czf $FINAL/s62p.tgz -C $OUT .' EXIT
nvidia-smi --query-gpu=name --format=csv,noheader > $R/gpu.txt
S28=calibration/drawn_shapes/seed28; S29=calibration/drawn_shapes/seed29
timeout 400 python3 -m mok_kernels.tile_sweep --out $R/tiles_padded.jsonl --deadline-s 380 \
  --candidates m128-g128-d256-w8-s4,m128-g64-d256-w8-s4,m128-g64-d128-w8-s4 \
  --workloads $S29/syn29-h5376-i320-e128-k10-s1.toml:8:4096,$S28/syn28-h2560-i448-e16-k2.toml:4:4608,$S29/syn29-h7424-i832-e64-k6-s1.toml:8:2048,$S28/syn28-h2560-i256-e16-k1.toml:4:4608 \
  > $R/tiles_padded.log 2>&1
cat $R/gpu.txt; tail -n 25 $R/tiles_padded.log | cut -c1-170
