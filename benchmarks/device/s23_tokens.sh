#!/bin/bash
# Session 23 (2026-12-02), nvidia-h200, <= 480 s: the space at 128 and 512 tokens per GPU, which
# the sweep (64, 256, 1024 ... 8192) never measured and where the held-out decode runs read
# +5-9% slow in the median (qwen3-235b EP 32 128 tokens +28%): first the megakernel's GEMM phases
# alone (the GEMM table's points), then MoK in the sweep's seeded order as far as the deadline
# goes (registered first: calibration/predictions/h200_space_t128_512_2026-12-02.jsonl).
# The compile warm-up runs in five processes (s23_space.sh's 22 ran the GPU out of memory).
export PYTHONPATH=.
T0=$(date +%s); R=$OUT/s23t; J=/tmp/junk23t; mkdir -p $R $J
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader > $R/gpu.txt 2>&1
S="python3 -m mok_kernels.space_sweep --tokens 128,512"
i=0
for g in deepseek-v3,qwen3-30b-a3b kimi-k2,minimax-m2 glm-4.5,gpt-oss-120b,mixtral-8x7b \
         glm-5,qwen3-next-80b-a3b qwen3-235b-a22b,llama4-maverick; do
  i=$((i + 1))
  ( timeout 60 $S --compile-only --gemm-phases --models $g --deadline-s 50 < /dev/null > $J/g$i.log 2>&1
    timeout 60 $S --compile-only --models $g --deadline-s 50 < /dev/null > $J/c$i.log 2>&1 ) &
done
wait
echo "warm-up $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
grep -h "Error" $J/*.log | sort | uniq -c | head > $R/warmup_errors.log
timeout 150 $S --gemm-phases --out $R/gemm_phases_t.jsonl --deadline-s 135 < /dev/null > $R/gemm_t.log 2>&1
echo "gemm phases $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
REM=$(( 465 - ($(date +%s) - T0) ))
timeout $REM $S --out $R/space_t.jsonl --deadline-s $(( REM - 20 )) < /dev/null > $R/space_t.log 2>&1
echo "end $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
