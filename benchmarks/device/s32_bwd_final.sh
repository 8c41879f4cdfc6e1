#!/bin/bash
# Session 32, backward call: the new training tiles (A items of 256 columns, epilogue through a
# scratch: a_epi=128) checked and timed. (1) GPU tests: backward a_epi / saved / direct cases,
# the autograd GPU tests (training default), random backward shapes with the training tiles;
# (2) records: old and new training tiles beside the GEMMs alone and torch autograd, kimi-k2 /
# glm-5 EP 8 rank 0, 1,024 / 2,048 / 4,096 tokens, one run. nvidia-h200.
export PYTHONPATH=.
T0=$(date +%s); R=$OUT/s32b; mkdir -p $R calibration/runs/h200
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo "not an H200"; exit 0; }
{ nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader; date -u; } > $R/gpu.txt 2>&1
timeout 300 python3 -m pytest -n 2 -v -rA -p no:cacheprovider tests/test_backward_gpu.py \
  tests/test_autograd_gpu.py tests/test_random_shapes_gpu.py \
  -k "a_epi or saved_gu_production or direct_weight or autograd_gpu or random_shape_backward" > $R/t_bwd.log 2>&1
echo "tests $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
OLD="saved_gu=1,bn_a=128,bn_x=256,w_direct=1,w_bf16=1"
NEW="saved_gu=1,bn_a=256,a_epi=128,bn_x=256,w_direct=1,w_bf16=1"
timeout 200 python3 -m mok_kernels.bench --pass bwd --model kimi-k2,glm-5 --ep 8 --rank 0 \
  --tokens 1024,2048,4096 --routing uniform --capacity 1.0 --minibatch 4096 --comm-sms 32 \
  --systems mok,gemm-only,torch-autograd --bwd-tiles "$OLD;$NEW" \
  --out calibration/runs/h200/bwd_a_epi_s32.jsonl > $R/bwd_final.log 2>&1
echo "bench exit $? $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
cp calibration/runs/h200/bwd_a_epi_s32.jsonl $R/ 2>/dev/null
grep -hE " passed| failed" $R/t_*.log | tail -n 2
grep -hE "FAILED" $R/t_*.log | cut -c1-160 | head -14
grep -hE " ms |FAILED|Error" $R/bwd_*.log | cut -c1-200 | tail -n 20; cat $R/gpu.txt
