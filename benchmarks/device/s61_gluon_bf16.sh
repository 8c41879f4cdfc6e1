#!/bin/bash
# For session 61 (an H100 or H200, <= 500 s): the first GPU run of the Gluon pass with BF16
# operands (GluonBF16MoK, written in session 60 with no device time left; its FP8 twin's PTX is
# unchanged). 1. tests/test_gluon_bf16_gpu.py: every rank of EP 8 against float32 at kimi-k2,
# glm-5 and qwen3-30b widths and I padded from 320. 2. Only if they pass: rank 0 of EP 8 x 4,096
# timed beside the Triton BF16 megakernel in the same run (benchmarks/gluon_fp8_mok.py
# --precision bf16 --baseline) on four presets. Everything lands in $OUT/s61g.tgz.
export PYTHONPATH=.
T0=$(date +%s); FINAL=$OUT; export OUT=/tmp/s61g; R=$OUT/s61g; mkdir -p $R
trap 'tar -czf $FINAL/s61g.tgz -C $OUT .' EXIT
{ nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader; date -u; } > $R/gpu.txt
timeout 240 python3 -m pytest -q -p no:cacheprovider tests/test_gluon_bf16_gpu.py > $R/tests.log 2>&1
RC=$?; echo "tests rc $RC $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
if [ $RC -eq 0 ]; then
  L=$(( ${LIMIT:-490} - ($(date +%s) - T0) ))
  timeout $L python3 benchmarks/gluon_fp8_mok.py --precision bf16 --baseline \
    --checks qwen3-30b-widths --variants default,ys=0 \
    --models kimi-k2,glm-5,qwen3-30b-a3b,qwen3-next-80b-a3b > $R/time.log 2>&1
  echo "timing rc $? $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
fi
cat $R/gpu.txt; tail -n 15 $R/tests.log; grep -h "ms\|FAIL" $R/time.log 2>/dev/null | head -40
