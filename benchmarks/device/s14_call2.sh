#!/bin/bash
# Session 14, device call 2 (nvidia-h200, <= 560 s): activation tiles through TMA (KernelConfig
# tma_a). Untimed in parallel: its GPU tests (bits equal to pointer loads, float32 reference; the
# randomized forward shapes, half of them with tma_a) and compile warm-ups of the A/B below.
# Then timed, alone: tile_sweep A/B of tma_a at today's tiles (group_m 1 narrow, 8 wide).
export PYTHONPATH=.
T0=$(date +%s); R=/tmp/s14/r2; J=/tmp/junk2; mkdir -p $R $J
{ nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader; date -u; } > $R/gpu.txt 2>&1
NARROW="m128-g128-d256-w8-s4,m128-g128-d256-w8-s4-A,m128-g128-d256-w8-s3-A"
WIDE="m128-g128-d256-w8-s4-G8,m128-g128-d256-w8-s4-G8-A,m128-g128-d256-w8-s3-G8-A"
WN1="kimi-k2:8:4096,glm-5:8:4096,deepseek-v3:16:2048"
WN2="qwen3-30b-a3b:8:4096,qwen3-next-80b-a3b:8:2048,gpt-oss-120b:8:4096"
WN3="minimax-m2:8:4096,qwen3-235b-a22b:8:4096,kimi-k2:32:1024"
WW="mixtral-8x7b:8:4096,llama4-maverick:8:4096"
T="timeout 300 python3 -m pytest -q -rA --durations=5"
$T tests/test_kernels_gpu.py -k "tma_activation" > $R/t_tma_a.log 2>&1 &
$T tests/test_random_shapes_gpu.py -k forward > $R/t_random_fwd.log 2>&1 &
W="timeout 300 python3 -m mok_kernels.tile_sweep --iters 1 --warmup 0"
$W --workloads $WN1 --candidates $NARROW --out $J/a.jsonl > $J/a.log 2>&1 &
$W --workloads $WN2 --candidates $NARROW --out $J/b.jsonl > $J/b.log 2>&1 &
$W --workloads $WN3 --candidates $NARROW --out $J/c.jsonl > $J/c.log 2>&1 &
$W --workloads $WW --candidates $WIDE --out $J/d.jsonl > $J/d.log 2>&1 &
wait
echo "warm-up $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
tail -n 3 $J/*.log > $R/warmup_tails.log 2>&1
REM=$(( 540 - ($(date +%s) - T0) ))
timeout $REM python3 -m mok_kernels.tile_sweep --workloads $WW --candidates $WIDE \
  --out $R/tma_a.jsonl --deadline-s 100 > $R/tma_a.log 2>&1
REM=$(( 540 - ($(date +%s) - T0) ))
timeout $REM python3 -m mok_kernels.tile_sweep --workloads $WN1,$WN2,$WN3 --candidates $NARROW \
  --out $R/tma_a.jsonl --deadline-s $(( REM - 15 )) >> $R/tma_a.log 2>&1
echo "end $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
tar czf $OUT/call2.tgz -C /tmp/s14 r2
