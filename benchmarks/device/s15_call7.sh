#!/bin/bash
# Session 15, device call 7 (nvidia-h200, <= 220 s): split_dn (the down GEMM's K loop in slices,
# partial tiles summed in slice order by the item completing a block). Untimed in parallel: its
# GPU tests (7 shapes) and the default path's (split_dn 1: the kernel's down epilogue moved under
# a static branch), and compile warm-ups. Then timed alone: tile_sweep at decode sizes.
export PYTHONPATH=.
T0=$(date +%s); R=/tmp/s15/r7; J=/tmp/junk7; mkdir -p $R $J
{ nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader; date -u; } > $R/gpu.txt 2>&1
T="timeout 150 python3 -m pytest -q -rA -p no:cacheprovider tests/test_kernels_gpu.py"
for s in 0 1 2 3 4 5 6; do $T -k "split_down and shape$s" > $R/t_split_$s.log 2>&1 & done
$T -k "test_megakernel_matches_reference or hidden_sizes_not" > $R/t_default.log 2>&1 &
C="m128-g128-d256-w8-s4,m128-g128-d256-w8-s4-k4,m128-g128-d256-w8-s4-k8,m128-g128-d256-w8-s4-k16"
S="timeout 150 python3 -m mok_kernels.tile_sweep --iters 1 --warmup 0"
for w in mixtral-8x7b:8:64 llama4-maverick:8:64 kimi-k2:32:64; do
  $S --workloads $w --candidates $C --out $J/$w.jsonl > $J/$w.log 2>&1 &
done
wait
echo "tests $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
timeout 50 python3 -m mok_kernels.tile_sweep --candidates $C --deadline-s 40 --out $R/split_dn.jsonl \
  --workloads mixtral-8x7b:8:64,mixtral-8x7b:4:64,mixtral-8x7b:8:256,llama4-maverick:8:64,kimi-k2:32:64,mixtral-8x7b:8:1024 \
  > $R/split_dn.log 2>&1
echo "end $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
tar czf $OUT/call7.tgz -C /tmp/s15 r7
