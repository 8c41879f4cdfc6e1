#!/bin/bash
# Session 27, fifth device call (nvidia-h200, <= 330 s). More comm programs for the Gluon FP8
# pass: its comm programs alone ran 1.29 ms at 32 and 0.91 at 48 (kimi-k2, s27_fourth.sh),
# and with join they take items after their copies. (1) The benchmark (checks at the reduced
# shapes, then timed beside the BF16 megakernel): kimi-k2 / glm-5 EP 8, 4,096 tokens, comm 32
# (default) / 40 / 48 / 56, and 48 with join 250. (2) mok bench on the copy-bound presets
# (qwen3-30b-a3b, qwen3-next-80b-a3b) and deepseek-v3: 1,024 / 4,096 tokens, uniform / hot,
# comm 32 / 48 / 64 (fit and pick data, not registered).
export PYTHONPATH=.
T0=$(date +%s); R=$OUT/s27e; mkdir -p $R calibration/runs/h200_gluon
{ nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader; date -u; } > $R/gpu.txt 2>&1
timeout 150 python3 benchmarks/gluon_fp8_mok.py --iters 20 --warmup 5 --baseline \
  --checks kimi-k2-widths,glm-5-widths --check-variants default \
  --variants default,comm=40,comm=48,comm=56,comm=48+join=250 > $R/mok.log 2>&1
echo "mok exit $? $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
timeout 160 python3 -m mok_kernels.bench --model qwen3-30b-a3b,qwen3-next-80b-a3b,deepseek-v3 \
  --ep 8 --rank 0 --tokens 1024,4096 --routing uniform,hot:0.1 --precision fp8 \
  --fp8-kernel gluon --systems mok --dispatch pull --combine push --minibatch 4096 \
  --comm-sms 32,48,64 --capacity 1.0 --iters 10 --warmup 3 \
  --out calibration/runs/h200_gluon/comm_programs.jsonl > $R/bench.log 2>&1
echo "bench exit $? $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
cp calibration/runs/h200_gluon/comm_programs.jsonl $R/ 2>/dev/null
grep -E "FAIL|ok$" $R/mok.log | cut -c1-120 | head -4; grep -vE "^check " $R/mok.log | tail -n 14
tail -n 36 $R/bench.log | cut -c1-120; cat $R/gpu.txt
