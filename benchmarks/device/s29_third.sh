#!/bin/bash
# Session 29, third device call (nvidia-h200, <= 580 s). Weight gradients written straight in
# the parameters' layout and dtype (BackwardTiles w_direct / w_bf16). (1) Untimed, in parallel:
# tests/test_backward_gpu.py (all of it: the kernel gained an argument; the new w_direct cases
# compare with the packed path bit for bit) and tests/test_autograd_gpu.py. (2) Timed, alone:
# `mok bench --pass bwd` with the training tiles, + w_direct, + w_direct,w_bf16 (kimi-k2 /
# glm-5 EP 8 rank 0, 1,024 / 4,096 tokens) beside the same rank's backward GEMMs alone; then the
# autograd path's backward (benchmarks/bwd_autograd_cost.py, EP 1, bf16 parameters) packed vs
# direct, gradients compared bit for bit.
export PYTHONPATH=.
T0=$(date +%s); R=$OUT/s29c; mkdir -p $R calibration/runs/h200
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo "not an H200"; nvidia-smi -L; exit 0; }
{ nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader; date -u; } > $R/gpu.txt 2>&1
P="python3 -m pytest -v -p no:cacheprovider"
timeout 330 $P tests/test_backward_gpu.py > $R/t_backward.log 2>&1 &
timeout 330 $P tests/test_autograd_gpu.py > $R/t_autograd.log 2>&1 &
wait
echo "tests $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
TL="saved_gu=1,bn_a=128,bn_x=256"
timeout 150 python3 -m mok_kernels.bench --pass bwd --model kimi-k2,glm-5 --ep 8 --rank 0 \
  --tokens 1024,4096 --routing uniform --minibatch 4096 --comm-sms 32 --capacity 1.0 \
  --systems mok,gemm-only --bwd-tiles "$TL;$TL,w_direct=1;$TL,w_direct=1,w_bf16=1" \
  --out calibration/runs/h200/bwd_direct.jsonl > $R/bwd_direct.log 2>&1
echo "bench exit $? $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
cp calibration/runs/h200/bwd_direct.jsonl $R/ 2>/dev/null
REM=$(( 570 - ($(date +%s) - T0) ))
timeout $REM python3 benchmarks/bwd_autograd_cost.py --shape 7168,2048,64,8 --tokens 1024,4096 \
  --tiles "$TL;$TL,w_direct=1" > $R/autograd_cost.log 2>&1
echo "autograd cost exit $? $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
grep -hE "passed|failed" $R/t_*.log | tail -n 3
grep -hE "FAILED|ERROR" $R/t_*.log | cut -c1-220 | head
tail -n 16 $R/bwd_direct.log | cut -c1-200; cat $R/autograd_cost.log | cut -c1-250; cat $R/gpu.txt
