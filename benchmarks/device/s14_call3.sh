#!/bin/bash
# Session 14, device call 3 (nvidia-h200, <= 560 s): six synthetic layer shapes no preset has
# (calibration/unseen_shapes/*.toml), predictions registered before the run
# (calibration/predictions/h200_unseen_shapes_2026-12-01.jsonl): EP 8/16 (4/8 for 8 experts),
# 512 and 4096 tokens, uniform and zipf:1.2, six knob settings and the GEMMs alone. Untimed in
# parallel first: compile warm-ups (one process per shape) and the tma_a GPU test fixed.
export PYTHONPATH=.
T0=$(date +%s); R=/tmp/s14/r3; J=/tmp/junk3; mkdir -p $R $J
{ nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader; date -u; } > $R/gpu.txt 2>&1
S=calibration/unseen_shapes
BIG="$S/syn-h3072-i1024-e64-k6-s1.toml,$S/syn-h4096-i2560-e32-k4.toml,$S/syn-h2304-i640-e96-k8.toml,$S/syn-h5120-i4096-e16-k2-s1.toml,$S/syn-h8192-i1280-e128-k8-s1.toml"
SMALL="$S/syn-h1792-i6144-e8-k2.toml"
C="--tokens 512,4096 --routing uniform,zipf:1.2 --minibatch 2048 --capacity 1.0 --rank 0"
A="--dispatch pull,push --combine push,pull --comm-sms 32"
B="--dispatch pull,push --combine push --comm-sms 16"
timeout 200 python3 -m pytest -q -rA tests/test_kernels_gpu.py -k "tma_activation" > $R/t_tma_a.log 2>&1 &
for m in ${BIG//,/ }; do
  timeout 200 python3 -m mok_kernels.bench --model $m --ep 8 $C $A --systems mok --iters 1 --warmup 0 --out $J/$(basename $m).jsonl > $J/$(basename $m).log 2>&1 &
done
timeout 200 python3 -m mok_kernels.bench --model $SMALL --ep 4 $C $A --systems mok --iters 1 --warmup 0 --out $J/small.jsonl > $J/small.log 2>&1 &
wait
echo "warm-up $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
tail -n 2 $J/*.log > $R/warmup_tails.log 2>&1
REM=$(( 545 - ($(date +%s) - T0) ))
timeout $REM python3 -m mok_kernels.bench --model $BIG --ep 8,16 $C $A --systems mok,gemm-only --out $R/unseen.jsonl > $R/unseen_a.log 2>&1
echo "a $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
REM=$(( 545 - ($(date +%s) - T0) ))
timeout $REM python3 -m mok_kernels.bench --model $SMALL --ep 4,8 $C $A --systems mok,gemm-only --out $R/unseen.jsonl > $R/unseen_b.log 2>&1
REM=$(( 545 - ($(date +%s) - T0) ))
timeout $REM python3 -m mok_kernels.bench --model $BIG --ep 8,16 $C $B --systems mok --out $R/unseen.jsonl > $R/unseen_c.log 2>&1
REM=$(( 545 - ($(date +%s) - T0) ))
timeout $REM python3 -m mok_kernels.bench --model $SMALL --ep 4,8 $C $B --systems mok --out $R/unseen.jsonl > $R/unseen_d.log 2>&1
echo "end $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
tar czf $OUT/call3.tgz -C /tmp/s14 r3
