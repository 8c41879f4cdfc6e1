#!/bin/bash
# Session 30, first device call (nvidia-h200, <= 580 s). The backward's weight-gradient (W)
# items: operands by tensor descriptors (BackwardTiles w_tma), their own pipeline depth
# (w_stages), one readiness wait per expert and program. (1) Untimed: tests/test_backward_gpu.py
# whole (the W path was refactored; the new w_tma cases against float32, twice for the bits,
# beside the pointer path). (2) Timed, alone: `mok bench --pass bwd`, kimi-k2 / glm-5 EP 8
# rank 0, 4,096 tokens, the training tiles and their W variants beside the GEMMs alone; diag=1
# (no W items) for the W items' share.
export PYTHONPATH=.
cp -r s30snap/mok_model/* mok_model/ 2>/dev/null   # HEAD versions of files a helper is editing
T0=$(date +%s); R=$OUT/s30a; mkdir -p $R calibration/runs/h200
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo "not an H200"; nvidia-smi -L; exit 0; }
{ nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader; date -u; } > $R/gpu.txt 2>&1
timeout 330 python3 -m pytest -v -s -p no:cacheprovider tests/test_backward_gpu.py > $R/t_backward.log 2>&1
echo "tests $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
T="saved_gu=1,bn_a=128,bn_x=256,w_direct=1,w_bf16=1"
REM=$(( 575 - ($(date +%s) - T0) ))
timeout $REM python3 -m mok_kernels.bench --pass bwd --model kimi-k2,glm-5 --ep 8 --rank 0 \
  --tokens 4096 --routing uniform --minibatch 4096 --comm-sms 32 --capacity 1.0 \
  --systems mok,gemm-only \
  --bwd-tiles "$T;$T,w_tma=1;$T,w_tma=1,w_stages=4;$T,w_tma=1,w_stages=2;$T,w_stages=4;$T,bk_rows=32;$T,diag=1;$T,w_tma=1,bk_rows=128,w_stages=2" \
  --out calibration/runs/h200/bwd_tma.jsonl > $R/bwd_tma.log 2>&1
echo "bench exit $? $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
cp calibration/runs/h200/bwd_tma.jsonl $R/ 2>/dev/null
grep -hE "passed|failed" $R/t_*.log | tail -n 3
grep -hE "FAILED|ERROR|bit for bit" $R/t_*.log | cut -c1-220 | head -20
grep -E " ms |GEMMs|FAILED|Error" $R/bwd_tma.log | cut -c1-230 | tail -n 24; cat $R/gpu.txt
