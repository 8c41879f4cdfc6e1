#!/bin/bash
# Session 17, device call 6 (nvidia-h200, <= 240 s): the record paths changed in review (a record
# names the down split the layer ran): the bench GPU tests, and a one-shape space sweep.
export PYTHONPATH=.
R=/tmp/s17/r6; mkdir -p $R
timeout 200 python3 -m pytest -q -rA tests/test_kernels_gpu.py -k "bench" > $R/t_bench.log 2>&1 &
timeout 200 python3 -m mok_kernels.space_sweep --shapes calibration/drawn_shapes/seed2/syn2-h7936-i6848-e8-k1.toml \
  --per-shape 1 --eps 8 --tokens 96 --out $R/sweep.jsonl --iters 2 --warmup 1 > $R/sweep.log 2>&1 &
timeout 200 python3 -m mok_kernels.space_sweep --shapes calibration/drawn_shapes/seed2/syn2-h7936-i6848-e8-k1.toml \
  --per-shape 1 --eps 8 --tokens 96 --gemm-phases --out $R/sweep_gemm.jsonl --iters 2 --warmup 1 > $R/sweep_gemm.log 2>&1 &
wait
tar czf $OUT/call6.tgz -C /tmp/s17 r6
