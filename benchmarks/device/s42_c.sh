#!/bin/bash
# Session 42, call 3 (nvidia-h200, <= 570 s): the kernel with dn_blocks chosen from the shape
# (tiles.forward_dn_blocks, the default since this commit). First the GPU tests that reach the
# new default against float32 (every model preset's shape, the flattened-blocks test, random
# forward shapes), in parallel streams; then, alone on the GPU, issue 13's preset table for the
# five presets whose workloads it changes: EP 8 / 32 at 256 / 4,096 tokens uniform and EP 16 at
# 1,024 / 8,192 zipf 1.2, the same rank's GEMMs alone, four MoK settings and the model's pick.
# Registered before the run: calibration/predictions/h200_presets_blocks_2026-12-04.jsonl and
# h200_presets_zipf_blocks_2026-12-04.jsonl. Every output in one archive ($OUT/s42c.tgz).
R=$OUT/s42c; LIMIT=${LIMIT:-560}; source benchmarks/device/pytest_steps.sh
{ nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader; date -u; } > $R/gpu.txt
K=tests/test_kernels_gpu.py
step presets $K -k "every_model_preset" &
step blocks $K -k "flattened_blocks or default_down_blocks" &
step rnd tests/test_random_shapes_gpu.py -k "forward" &
step lag $K -k "list_lag or split_down or tma_activation or grouped_gate_up" &
wait
M=qwen3-30b-a3b,qwen3-next-80b-a3b,qwen3-235b-a22b,glm-4.5,minimax-m2
KN="--dispatch pull,push --combine push --minibatch 4096 --comm-sms 16,32 --systems gemm-only,mok --auto"
left=$(( LIMIT - ($(date +%s) - T0) ))
timeout $(( left * 55 / 100 )) python3 -m mok_model.cli bench --model $M --ep 8,32 --tokens 256,4096 \
  $KN --out $R/presets.jsonl > $R/presets.log 2>&1
echo "presets exit $? at $(( $(date +%s) - T0 )) s" >> $R/summary.log
left=$(( LIMIT - ($(date +%s) - T0) - 10 ))
timeout $left python3 -m mok_model.cli bench --model $M --ep 16 --tokens 1024,8192 --routing zipf:1.2 \
  $KN --out $R/zipf.jsonl > $R/zipf.log 2>&1
echo "zipf exit $? at $(( $(date +%s) - T0 )) s" >> $R/summary.log
tar -czf $OUT/s42c.tgz -C $OUT s42c
cat $R/summary.log; grep -h "FAILED\|Error" $R/*.log | head -20; wc -l $R/*.jsonl
grep -h "AUTO" $R/presets.log $R/zipf.log | cut -c1-150
