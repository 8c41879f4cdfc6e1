#!/bin/bash
# For session 63 (either card, <= 320 s): the random-shape local-group and FP8 cases of seed
# offset 63000 (tests/test_random_shapes_gpu.py; their push cases draw push_loop tiles or shares,
# the FP8 ones quantize in the push lanes' copies), each against float32. Logs in $OUT/s63r.tgz.
export PYTHONPATH=.
T0=$(date +%s); FINAL=$OUT; export OUT=/tmp/s63r; R=$OUT/s63r; mkdir -p $R
trap 'tar -czf $FINAL/s63r.tgz -C $OUT .' EXIT
{ nvidia-smi --query-gpu=name --format=csv,noheader; date -u; } > $R/gpu.txt
MOK_RANDOM_SHAPES_SEED=63000 timeout 300 python3 -m pytest -q -p no:cacheprovider \
  tests/test_random_shapes_gpu.py -k "local_group or fp8" -rA > $R/group_fp8.log 2>&1
echo "rc $? $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
cat $R/gpu.txt; tail -n 3 $R/group_fp8.log; grep -c PASSED $R/group_fp8.log; grep -h "FAILED\|Error" $R/group_fp8.log | head
