#!/bin/bash
# Session 41 (nvidia-h200, <= 470 s): issue 13's per-preset kernel table widened on the kernel
# whose push lanes copy runs. Ten presets at EP 16 emulated, 64 / 1,024 / 8,192 tokens per GPU,
# zipf 1.2 routing; mixtral-8x7b (8 experts: EP 8 only) at 64-8,192 tokens, uniform and zipf 1.2.
# Each workload: the same rank's GEMMs alone, four MoK settings (pull / push dispatch, push
# combine, 16 / 32 comm SMs, minibatch 4,096) and the model's own pick (--auto). Registered
# before any run: calibration/predictions/h200_presets_zipf_ep16_2026-12-04.jsonl and
# h200_mixtral_ep8_2026-12-04.jsonl. Report: python -m calibration.registered PRED RUNS;
# python benchmarks/kernel_space.py RUNS
R=$OUT/s41t; mkdir -p $R; export PYTHONPATH=.
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo "not an H200"; exit 0; }
{ nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader; date -u; } > $R/gpu.txt
K="--dispatch pull,push --combine push --minibatch 4096 --comm-sms 16,32 --systems gemm-only,mok --auto"
timeout 120 python3 -m mok_model.cli bench --model mixtral-8x7b --ep 8 --tokens 64,256,1024,4096,8192 \
  --routing uniform,zipf:1.2 $K --out $R/mixtral.jsonl > $R/mixtral.log 2>&1
echo "mixtral exit $? at $(date -u)" >> $R/gpu.txt
timeout 340 python3 -m mok_model.cli bench --model deepseek-v3,kimi-k2,glm-4.5,glm-5,qwen3-235b-a22b,qwen3-30b-a3b,qwen3-next-80b-a3b,gpt-oss-120b,llama4-maverick,minimax-m2 \
  --ep 16 --tokens 64,1024,8192 --routing zipf:1.2 $K --out $R/presets_zipf.jsonl > $R/presets_zipf.log 2>&1
echo "presets exit $? at $(date -u)" >> $R/gpu.txt
cat $R/gpu.txt; grep -h "AUTO" $R/*.log | cut -c1-150; wc -l $R/*.jsonl
