#!/bin/bash
# Session 55 (an H100 or H200, <= 520 s): the minibatch-512 lead on six more shapes, group_m 1 / 8
# at lag 1 / 2 (the hypothesis in s54_mb_gemm.py's docstring, written before the run), then the
# forward random shapes of seed offset 55000 (no run has drawn them) for what time is left.
export PYTHONPATH=.
M=$OUT/s55mb; mkdir -p $M
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader > $M/gpu.txt
LAGS=1,2 GROUP_M=1,8 MODELS=qwen3-30b-a3b,qwen3-next-80b-a3b,gpt-oss-120b,minimax-m2,deepseek-v3,calibration/drawn_shapes/seed23/syn23-h5632-i768-e64-k9-s1.toml \
  timeout 300 python3 benchmarks/device/s54_mb_gemm.py $M/mb_gemm.json > $M/mb_gemm.txt 2>&1
echo "mb exit $? at $(date -u)" >> $M/gpu.txt
cat $M/mb_gemm.txt | cut -c1-200 | tail -n 80
R=$OUT/s55rand; LIMIT=$(( 500 - SECONDS )); source benchmarks/device/pytest_steps.sh
export MOK_RANDOM_SHAPES_SEED=55000; step rand tests/test_random_shapes_gpu.py -k "forward"
cat $R/summary.log; grep -h "FAILED\|Error" $R/*.log | head -20
