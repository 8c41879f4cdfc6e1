#!/bin/bash
# Session 37 (nvidia-h200, <= 380 s): what a copy loses beside GEMMs, per GEMM shape
# (calibration/nvlink_bench.py --only copy_gemm: one persistent launch, k programs pulling rows
# from the emulated peer in local HBM, the other 132 - k walking a tiled bf16 GEMM's tiles, as
# the megakernel splits its SMs). Shapes: a decode GEMM streaming its weights (128x7168x4096),
# the regret case's expert gate/up (2688x3328x2560) and down (2688x1280x3328), a large one
# (8192x7168x4096), a wide weight-bound one (512x7936x13696); k = 8, 16, 32. Expectation from
# the layer records (docs/calibration.md "Session 37"): ~0.2 beside the regret case's GEMMs,
# near 0 beside the decode GEMMs, if the layer's constant is the copy slowed beside GEMMs.
export PYTHONPATH=.
R=$OUT/s37c; mkdir -p $R
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo "not an H200"; exit 0; }
{ nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader; date -u; } > $R/gpu.txt
timeout 360 python3 calibration/nvlink_bench.py --emulate --only copy_gemm --deadline-s 300 \
  --out $R/copy_gemm.jsonl > $R/copy_gemm.log 2>&1
echo "exit $?" >> $R/gpu.txt
python3 -c "
from mok_model.records import read_records
for r in read_records(['$R/copy_gemm.jsonl']):
    m = r['metrics']; c = r['config']
    print(c['gemm_shape'], 'k', c['copy_sms'], 'copy %.3f -> %.3f' % (m['copy_alone_ms'], m['copy_beside_ms']),
          'gemm %.3f -> %.3f' % (m['gemm_alone_ms'], m['gemm_beside_ms']), 'slowdown %.3f' % m['copy_slowdown'],
          'outlasted', m['copy_outlasted_gemm'], 'gemm GB/s %.0f TF/s %.0f' % (m['gemm_min_GBps_alone'], m['gemm_TFLOPs_alone']))
" >> $R/gpu.txt 2>&1
cat $R/gpu.txt; tail -n 5 $R/copy_gemm.log
