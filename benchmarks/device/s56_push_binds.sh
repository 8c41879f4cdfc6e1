#!/bin/bash
# Prepared in session 55 (an H100 or H200, <= 420 s): push against pull dispatch where the copy
# binds. The registered drawn shapes' worst misses, on both cards, are push dispatch at 8 comm
# SMs under hot routing at EP 8-32 on narrow experts (I 384-512) and wide H (7,680-7,936): the
# model 24-38 % slow (docs/calibration.md "Session 55"). One GPU emulating EP 32 at 4,096 tokens
# a GPU, five presets of narrow to middling experts (qwen3-next-80b-a3b, qwen3-30b-a3b, H 2,048;
# minimax-m2 3,072; qwen3-235b-a22b 4,096; glm-4.5 5,120), hot 0.1 and uniform, push / pull
# dispatch, push combine, 8 / 16 comm SMs, beside the GEMMs alone. Registered before any run
# (shipped parameters, analytic and simulator): calibration/predictions/h100_push_binds_2026-12-05.jsonl
# and h200_push_binds_2026-12-05.jsonl. Written before the run: where the model's push / pull
# ratio is 1.3 or more (8 comm SMs), the measured ratio is at least 0.1 below it on glm-4.5 and
# qwen3-235b-a22b (H 4,096-5,120, as on the drawn wide-H shapes); on the H 2,048 presets within
# 0.1 of it. By the card in gpu.txt the records go to calibration/runs/h100/push_binds.jsonl or
# calibration/runs/h200/push_binds.jsonl. Report with
#   python -m calibration.registered calibration/predictions/CARD_push_binds_2026-12-05.jsonl RUNS --by model,routing
# then the push / pull table, before any model change.
R=$OUT/s56pb; mkdir -p $R; export PYTHONPATH=.
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q "H200\|H100" || { echo "not an H100 or H200"; exit 0; }
{ nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader; date -u; } > $R/gpu.txt
G="--model qwen3-next-80b-a3b,qwen3-30b-a3b,minimax-m2,glm-4.5,qwen3-235b-a22b --ep 32 --tokens 4096
   --routing hot:0.1,uniform --dispatch push,pull --combine push --minibatch 4096 --comm-sms 8,16
   --capacity 1.0"
timeout 400 python3 -m mok_model.cli bench $G --systems mok,gemm-only --iters 10 \
  --out $R/push_binds.jsonl > $R/push_binds.log 2>&1
echo "bench exit $? at $(date -u)" >> $R/gpu.txt
cat $R/gpu.txt; tail -n 25 $R/push_binds.log | cut -c1-200; wc -l $R/push_binds.jsonl
