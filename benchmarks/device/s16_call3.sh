#!/bin/bash
# Session 16, device call 3 (nvidia-h200, <= 560 s). Untimed, in parallel: the backward GPU tests
# (the forward's saved g/u has no shared rows now for a model without a shared expert) and
# compile warm-ups. Timed, alone: (1) the three unseen synthetic shapes without a shared expert
# (calibration/unseen_shapes/, never fitted) again with the fixed forward, predictions of the
# refitted parameters registered first (calibration/predictions/h200_unseen_noshared_2026-12-01
# .jsonl); (2) split_dn 2/4/8 at decode sizes where a rank's down phase has few work items, the
# data for choosing it per shape.
export PYTHONPATH=.
T0=$(date +%s); R=/tmp/s16/r3; J=/tmp/junk3; mkdir -p $R $J
{ nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader; date -u; } > $R/gpu.txt 2>&1
S=calibration/unseen_shapes
BIG="$S/syn-h4096-i2560-e32-k4.toml,$S/syn-h2304-i640-e96-k8.toml"
SMALL="$S/syn-h1792-i6144-e8-k2.toml"
C="--tokens 512,4096 --routing uniform,zipf:1.2 --minibatch 2048 --capacity 1.0 --rank 0"
A="--dispatch pull,push --combine push,pull --comm-sms 32"
B="--dispatch pull,push --combine push --comm-sms 16"
timeout 280 python3 -m pytest -q -rA tests/test_backward_gpu.py > $R/t_backward.log 2>&1 &
timeout 280 python3 -m pytest -q -rA tests/test_random_shapes_gpu.py -k backward > $R/t_random_bwd.log 2>&1 &
for m in ${BIG//,/ }; do
  timeout 200 python3 -m mok_kernels.bench --model $m --ep 8 $C $A --systems mok --iters 1 --warmup 0 --out $J/$(basename $m).jsonl > $J/$(basename $m).log 2>&1 &
  timeout 200 python3 -m mok_kernels.bench --model $m --ep 8 $C $B --systems mok --iters 1 --warmup 0 --out $J/b$(basename $m).jsonl > $J/b$(basename $m).log 2>&1 &
done
timeout 200 python3 -m mok_kernels.bench --model $SMALL --ep 4 $C $A --systems mok --iters 1 --warmup 0 --out $J/small.jsonl > $J/small.log 2>&1 &
K="m128-g128-d256-w8-s4,m128-g128-d256-w8-s4-k2,m128-g128-d256-w8-s4-k4,m128-g128-d256-w8-s4-k8"
KW="m128-g128-d256-w8-s4-G8,m128-g128-d256-w8-s4-G8-k2,m128-g128-d256-w8-s4-G8-k4,m128-g128-d256-w8-s4-G8-k8"
WIDE="mixtral-8x7b:8:64,mixtral-8x7b:8:128,mixtral-8x7b:8:256,mixtral-8x7b:4:64,mixtral-8x7b:4:256,llama4-maverick:32:64"
NARROW="gpt-oss-120b:32:64,gpt-oss-120b:32:256,qwen3-235b-a22b:32:64,qwen3-235b-a22b:32:256,qwen3-30b-a3b:32:64,minimax-m2:32:64,kimi-k2:32:64"
W="timeout 250 python3 -m mok_kernels.tile_sweep --iters 1 --warmup 0 --comm-sms 32"
for c in ${KW//,/ }; do $W --workloads $WIDE --candidates $c --out $J/w$c.jsonl > $J/w$c.log 2>&1 & done
for c in ${K//,/ }; do $W --workloads $NARROW --candidates $c --out $J/n$c.jsonl > $J/n$c.log 2>&1 & done
wait
echo "tests and warm-up $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
REM=$(( 550 - ($(date +%s) - T0) ))
timeout $REM python3 -m mok_kernels.bench --model $BIG --ep 8,16 $C $A --systems mok,gemm-only --out $R/unseen.jsonl > $R/unseen_a.log 2>&1
REM=$(( 550 - ($(date +%s) - T0) ))
timeout $REM python3 -m mok_kernels.bench --model $SMALL --ep 4,8 $C $A --systems mok,gemm-only --out $R/unseen.jsonl > $R/unseen_b.log 2>&1
REM=$(( 550 - ($(date +%s) - T0) ))
timeout $REM python3 -m mok_kernels.bench --model $BIG --ep 8,16 $C $B --systems mok --out $R/unseen.jsonl > $R/unseen_c.log 2>&1
REM=$(( 550 - ($(date +%s) - T0) ))
timeout $REM python3 -m mok_kernels.bench --model $SMALL --ep 4,8 $C $B --systems mok --out $R/unseen.jsonl > $R/unseen_d.log 2>&1
echo "unseen $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
REM=$(( 550 - ($(date +%s) - T0) ))
timeout $REM python3 -m mok_kernels.tile_sweep --comm-sms 32 --workloads $WIDE --candidates $KW \
  --out $R/split_dn.jsonl --deadline-s $(( REM / 2 )) > $R/split_wide.log 2>&1
REM=$(( 550 - ($(date +%s) - T0) ))
timeout $REM python3 -m mok_kernels.tile_sweep --comm-sms 32 --workloads $NARROW --candidates $K \
  --out $R/split_dn.jsonl --deadline-s $(( REM - 10 )) > $R/split_narrow.log 2>&1
echo "end $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
tail -n 2 $J/*.log > $R/warmup_tails.log 2>&1
tar czf $OUT/call3.tgz -C /tmp/s16 r3
