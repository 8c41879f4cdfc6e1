#!/bin/bash
# Session 29, fourth device call (nvidia-h200, <= 400 s): the autograd path with its new default
# (training tiles with w_direct): tests/test_autograd_gpu.py and the saved-path w_direct cases
# that s29_third.sh's time limit cut, in parallel; then, timed alone, the autograd backward at
# glm-5's widths (benchmarks/bwd_autograd_cost.py, EP 1, bf16), the old default against the new.
export PYTHONPATH=.
T0=$(date +%s); R=$OUT/s29d; mkdir -p $R
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo "not an H200"; nvidia-smi -L; exit 0; }
{ nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader; date -u; } > $R/gpu.txt 2>&1
P="python3 -m pytest -v -p no:cacheprovider"
timeout 250 $P tests/test_autograd_gpu.py > $R/t_autograd_default.log 2>&1 &
timeout 250 $P tests/test_backward_gpu.py -k "direct and saved" > $R/t_direct_saved.log 2>&1 &
wait
echo "tests $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
timeout 120 python3 benchmarks/bwd_autograd_cost.py --shape 6144,2048,64,8 --tokens 1024,4096 \
  --tiles "saved_gu=1,bn_a=128,bn_x=256;saved_gu=1,bn_a=128,bn_x=256,w_direct=1" \
  > $R/autograd_cost_glm.log 2>&1
echo "autograd cost exit $? $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
grep -hE "passed|failed" $R/t_*.log | tail -n 3
grep -hE "FAILED|ERROR" $R/t_*.log | cut -c1-220 | head
cat $R/autograd_cost_glm.log | cut -c1-250; cat $R/gpu.txt
