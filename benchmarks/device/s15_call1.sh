#!/bin/bash
# Session 15, device call 1 (nvidia-h200, <= 560 s). Untimed in parallel: the GPU tests adjusted
# last session (hot routing's top_k <= E - 1 rule) and compile warm-ups. Then timed, alone:
# (1) copy_rows (rows per dispatch copy step) x comm SMs on narrow and wide shapes
#     (tile_sweep -cNN candidates), (2) the hot:0.1 space workloads of mixtral-8x7b,
#     llama4-maverick and gpt-oss-120b again with the fixed hot draw (predictions registered in
#     calibration/predictions/h200_space_redo_2026-12-01.jsonl before this run).
export PYTHONPATH=.
T0=$(date +%s); R=/tmp/s15/r1; J=/tmp/junk1; mkdir -p $R $J
{ nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader; date -u; } > $R/gpu.txt 2>&1
C="m128-g128-d256-w8-s4,m128-g128-d256-w8-s4-c32,m128-g128-d256-w8-s4-c64"
W1="qwen3-30b-a3b:8:4096,qwen3-next-80b-a3b:8:4096,qwen3-30b-a3b:32:1024"
W2="minimax-m2:8:4096,qwen3-235b-a22b:8:8192,kimi-k2:8:4096,gpt-oss-120b:8:4096"
T="timeout 280 python3 -m pytest -q -rA --durations=5"
$T tests/test_kernels_gpu.py -k "grouped_gate_up" > $R/t_grouped.log 2>&1 &
$T tests/test_random_shapes_gpu.py > $R/t_random.log 2>&1 &
S="timeout 280 python3 -m mok_kernels.tile_sweep --iters 1 --warmup 0 --comm-sms 8,16"
$S --workloads $W1 --candidates $C --out $J/a.jsonl > $J/a.log 2>&1 &
$S --workloads $W2 --candidates $C --out $J/b.jsonl > $J/b.log 2>&1 &
P="timeout 280 python3 -m mok_kernels.space_sweep --compile-only --skip-done calibration/runs/h200_space/space.jsonl"
$P --models mixtral-8x7b > $J/c.log 2>&1 &
$P --models llama4-maverick > $J/d.log 2>&1 &
$P --models gpt-oss-120b > $J/e.log 2>&1 &
wait
echo "warm-up $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
tail -n 3 $J/*.log > $R/warmup_tails.log 2>&1
REM=$(( 540 - ($(date +%s) - T0) ))
timeout $REM python3 -m mok_kernels.tile_sweep --workloads $W1,$W2 --candidates $C \
  --comm-sms 8,16,32 --out $R/copy_rows.jsonl --deadline-s 150 > $R/copy_rows.log 2>&1
REM=$(( 540 - ($(date +%s) - T0) ))
timeout $REM python3 -m mok_kernels.space_sweep --models mixtral-8x7b,llama4-maverick,gpt-oss-120b \
  --skip-done calibration/runs/h200_space/space.jsonl --out $R/space_redo.jsonl \
  --deadline-s $(( REM - 20 )) > $R/space_redo.log 2>&1
echo "end $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
tar czf $OUT/call1.tgz -C /tmp/s15 r1
