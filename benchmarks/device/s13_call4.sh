#!/bin/bash
# Session 13, device call 4 (nvidia-h200, <= 400 s): KernelConfig.group_m (gate/up tiles in
# groups of row tiles, column-major). Untimed in parallel: its GPU tests, compile warm-ups. Then
# timed, alone: tile_sweep A/B (group_m 1/4/8/16, GEMMs alone in the same run) on wide and narrow
# experts. Everything returns as one tar.
export PYTHONPATH=.
T0=$(date +%s); R=/tmp/s13/r4; mkdir -p $R /tmp/junk4
{ nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader; date -u; git log -1 --format=%H; } > $R/gpu.txt 2>&1
C=m128-g128-d256-w8-s4,m128-g128-d256-w8-s4-G4,m128-g128-d256-w8-s4-G8,m128-g128-d256-w8-s4-G16
W1=mixtral-8x7b:4:4096,mixtral-8x7b:8:8192,llama4-maverick:8:4096,gpt-oss-120b:8:4096,minimax-m2:8:4096
W2=kimi-k2:8:4096,glm-5:8:4096,qwen3-30b-a3b:8:4096,qwen3-235b-a22b:8:4096,kimi-k2:16:1024
timeout 200 python3 -m pytest -q -rA tests/test_kernels_gpu.py -k grouped > $R/t_grouped.log 2>&1 &
timeout 200 python3 -m pytest -q -rA tests/test_fp8_gpu.py -k grouped > $R/t_grouped_fp8.log 2>&1 &
for w in mixtral-8x7b:4:4096,llama4-maverick:8:4096 gpt-oss-120b:8:4096,minimax-m2:8:4096,mixtral-8x7b:8:8192 \
         kimi-k2:8:4096,glm-5:8:4096 qwen3-30b-a3b:8:4096,qwen3-235b-a22b:8:4096,kimi-k2:16:1024; do
  timeout 200 python3 -m mok_kernels.tile_sweep --candidates $C --workloads $w --iters 1 --warmup 0 \
    --out /tmp/junk4/$w.jsonl > /tmp/junk4/$w.log 2>&1 &
done
wait
echo "warm-up $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
tail -n 2 /tmp/junk4/*.log > $R/warmup_tails.log 2>&1
timeout 170 python3 -m mok_kernels.tile_sweep --candidates $C --workloads $W1,$W2 --deadline-s 150 \
  --out $R/group_m.jsonl > $R/group_m.log 2>&1
echo "end $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
tar czf $OUT/call4.tgz -C /tmp/s13 r4
