#!/bin/bash
# session 12 call 3: compile warm-up in parallel (untimed, junk output), then timed grids one at a time
export PYTHONPATH=.
T0=$(date +%s)
date -u > $OUT/gpu.txt
BWD="--pass bwd --ep 8 --rank 0 --tokens 1024,2048,4096 --routing uniform,zipf:1.2,hot:0.1 --minibatch 2048,4096 --comm-sms 16,32 --capacity 1.0"
FP8="--ep 8 --rank 0 --tokens 1024,2048,4096,8192 --routing uniform,zipf:1.2,hot:0.1 --precision fp8 --systems mok,gemm-only --minibatch 2048,4096 --comm-sms 16,32 --capacity 1.0"
mkdir -p /tmp/junk
for m in kimi-k2 glm-5 qwen3-235b-a22b; do
  timeout 170 python3 -m mok_kernels.bench $BWD --model $m --tokens 1024 --routing uniform --iters 1 --warmup 0 --out /tmp/junk/b$m.jsonl > /tmp/junk/b$m.log 2>&1 &
  timeout 170 python3 -m mok_kernels.bench $FP8 --model $m --tokens 1024 --routing uniform --iters 1 --warmup 0 --out /tmp/junk/f$m.jsonl > /tmp/junk/f$m.log 2>&1 &
done
for m in deepseek-v3 kimi-k2,glm-5 glm-4.5 qwen3-235b-a22b,qwen3-30b-a3b qwen3-next-80b-a3b gpt-oss-120b,mixtral-8x7b llama4-maverick,minimax-m2; do
  timeout 170 python3 -m mok_kernels.space_sweep --compile-only --models $m --deadline-s 150 > /tmp/junk/s$m.log 2>&1 &
done
wait
echo "warm-up $(( $(date +%s) - T0 )) s" >> $OUT/gpu.txt
tail -n 3 /tmp/junk/*.log > $OUT/warmup_tails.log 2>&1
timeout 130 python3 -m mok_kernels.bench $BWD --model kimi-k2,glm-5,qwen3-235b-a22b --out $OUT/bwd_grid.jsonl > $OUT/bwd_grid.log 2>&1
echo "bwd $(( $(date +%s) - T0 )) s rc $?" >> $OUT/gpu.txt
timeout 150 python3 -m mok_kernels.bench $FP8 --model kimi-k2,glm-5,qwen3-235b-a22b --out $OUT/fp8_grid.jsonl > $OUT/fp8_grid.log 2>&1
timeout 60 python3 -m mok_kernels.bench $FP8 --precision bf16 --systems mok --minibatch 4096 --comm-sms 32 --model kimi-k2,glm-5,qwen3-235b-a22b --out $OUT/fp8_grid.jsonl >> $OUT/fp8_grid.log 2>&1
echo "fp8 $(( $(date +%s) - T0 )) s rc $?" >> $OUT/gpu.txt
REM=$(( 570 - ($(date +%s) - T0) ))
timeout $REM python3 -m mok_kernels.space_sweep --out $OUT/space.jsonl --deadline-s $(( REM - 25 )) > $OUT/space.log 2>&1
echo "end $(( $(date +%s) - T0 )) s" >> $OUT/gpu.txt
