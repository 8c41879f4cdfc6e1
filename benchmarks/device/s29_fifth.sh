#!/bin/bash
# Session 29, fifth device call (nvidia-h200, <= 330 s): load_weights copying straight into the
# packed buffers and the autograd backward re-packing only where the layer holds other weights.
# (1) Untimed, in parallel: tests/test_autograd_gpu.py (two MoE layers of one shape share a
# layer), and the FP8 load test. (2) Timed alone:
# benchmarks/bwd_autograd_cost.py --before (the loading of before, in the same run).
export PYTHONPATH=.
T0=$(date +%s); R=$OUT/s29e; mkdir -p $R
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo "not an H200"; nvidia-smi -L; exit 0; }
{ nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader; date -u; } > $R/gpu.txt 2>&1
P="python3 -m pytest -v -p no:cacheprovider"
timeout 200 $P tests/test_autograd_gpu.py > $R/t_autograd_load.log 2>&1 &
timeout 200 $P tests/test_fp8_gpu.py -k load_weights > $R/t_fp8_load.log 2>&1 &
wait
echo "tests $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
timeout 110 python3 benchmarks/bwd_autograd_cost.py --shape 7168,2048,64,8 --tokens 1024,4096 \
  --tiles "saved_gu=1,bn_a=128,bn_x=256,w_direct=1" --before > $R/autograd_load.log 2>&1
echo "autograd cost exit $? $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
grep -hE "passed|failed" $R/t_*.log | tail -n 3
grep -hE "FAILED|ERROR" $R/t_*.log | cut -c1-220 | head
cut -c1-260 $R/autograd_load.log; cat $R/gpu.txt
