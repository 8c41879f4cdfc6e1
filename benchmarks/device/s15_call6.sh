#!/bin/bash
# Session 15, device call 6 (nvidia-h200, <= 300 s): narrower column blocks where an expert has few
# row tiles. At decode sizes mixtral's one 14336-wide expert per rank has one row tile, so its
# down GEMM has H / bn_dn = 16 work items for ~100 compute SMs. tile_sweep times bn_dn 256 / 128
# / 64 (and bn_gu 64) after checking each against float32. Warm-up compiles in parallel first.
export PYTHONPATH=.
T0=$(date +%s); R=/tmp/s15/r6; J=/tmp/junk6; mkdir -p $R $J
{ nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader; date -u; } > $R/gpu.txt 2>&1
C="m128-g128-d256-w8-s4,m128-g128-d128-w8-s4,m128-g128-d64-w8-s4,m128-g64-d64-w8-s4,m128-g64-d128-w8-s4"
W="mixtral-8x7b:8:64,mixtral-8x7b:4:64,mixtral-8x7b:8:256,mixtral-8x7b:8:1024,llama4-maverick:8:64,qwen3-30b-a3b:32:64,kimi-k2:32:64"
S="timeout 150 python3 -m mok_kernels.tile_sweep --iters 1 --warmup 0"
for c in ${C//,/ }; do
  $S --workloads mixtral-8x7b:8:64,llama4-maverick:8:64,qwen3-30b-a3b:32:64,kimi-k2:32:64 \
    --candidates $c --out $J/$c.jsonl > $J/$c.log 2>&1 &
done
wait
echo "warm-up $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
timeout 130 python3 -m mok_kernels.tile_sweep --workloads $W --candidates $C --out $R/bn_dn.jsonl \
  --deadline-s 110 > $R/bn_dn.log 2>&1
echo "end $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
tail -n 2 $J/*.log > $R/warmup_tails.log 2>&1
tar czf $OUT/call6.tgz -C /tmp/s15 r6
