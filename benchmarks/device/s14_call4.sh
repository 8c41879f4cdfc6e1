#!/bin/bash
# Session 14, device call 4 (nvidia-h200, <= 420 s): the unseen shapes again. The megakernel's
# GEMM phases alone (mok-gemm) on the 48 forward workloads of call 3, and the backward pass
# (predictions registered: calibration/predictions/h200_unseen_bwd_2026-12-01.jsonl) at 1024 and
# 4096 tokens with its GEMMs alone and torch autograd. Compile warm-ups in parallel first.
export PYTHONPATH=.
T0=$(date +%s); R=/tmp/s14/r4; J=/tmp/junk4; mkdir -p $R $J
{ nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader; date -u; } > $R/gpu.txt 2>&1
S=calibration/unseen_shapes
BIG="$S/syn-h3072-i1024-e64-k6-s1.toml,$S/syn-h4096-i2560-e32-k4.toml,$S/syn-h2304-i640-e96-k8.toml,$S/syn-h5120-i4096-e16-k2-s1.toml,$S/syn-h8192-i1280-e128-k8-s1.toml"
SMALL="$S/syn-h1792-i6144-e8-k2.toml"
BW="--pass bwd --minibatch 2048 --comm-sms 32 --capacity 1.0 --rank 0 --dispatch pull --combine push --routing uniform"
for m in ${BIG//,/ }; do
  timeout 240 python3 -m mok_kernels.bench --model $m --ep 8 --tokens 1024 $BW --systems mok --iters 1 --warmup 0 --out $J/$(basename $m).jsonl > $J/$(basename $m).log 2>&1 &
done
timeout 240 python3 -m mok_kernels.bench --model $SMALL --ep 4 --tokens 1024 $BW --systems mok --iters 1 --warmup 0 --out $J/small.jsonl > $J/small.log 2>&1 &
wait
echo "warm-up $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
tail -n 2 $J/*.log > $R/warmup_tails.log 2>&1
G="--tokens 512,4096 --routing uniform,zipf:1.2 --rank 0 --systems mok-gemm"
timeout 150 python3 -m mok_kernels.bench --model $BIG --ep 8,16 $G --out $R/unseen_gemm.jsonl > $R/gemm_a.log 2>&1
timeout 60 python3 -m mok_kernels.bench --model $SMALL --ep 4,8 $G --out $R/unseen_gemm.jsonl > $R/gemm_b.log 2>&1
echo "gemm $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
REM=$(( 400 - ($(date +%s) - T0) ))
timeout $REM python3 -m mok_kernels.bench --model $BIG --ep 8 --tokens 1024,4096 $BW --systems mok,gemm-only,torch-autograd --out $R/unseen_bwd.jsonl > $R/bwd_a.log 2>&1
REM=$(( 410 - ($(date +%s) - T0) ))
timeout $REM python3 -m mok_kernels.bench --model $SMALL --ep 4 --tokens 1024,4096 $BW --systems mok,gemm-only,torch-autograd --out $R/unseen_bwd.jsonl > $R/bwd_b.log 2>&1
echo "end $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
tar czf $OUT/call4.tgz -C /tmp/s14 r4
