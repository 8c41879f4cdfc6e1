#!/bin/bash
# Session 30, last device call (nvidia-h200, <= 240 s). The W items as kept (w_group and
# w_stages dropped after s30_second.sh; the pointer path back to one loop per tile, the TMA
# path opt-in): (1) untimed, two pytest workers: tests/test_backward_gpu.py -k "w_item_variants
# or direct_weight"; (2) timed, alone: the training tiles with and without w_tma, kimi-k2 /
# glm-5 EP 8 rank 0, 4,096 tokens, beside the GEMMs alone.
export PYTHONPATH=.
cp -r s30snap/* . 2>/dev/null   # HEAD versions of the files helpers are editing (+ this session's records.py line)
T0=$(date +%s); R=$OUT/s30c; mkdir -p $R calibration/runs/h200
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo "not an H200"; nvidia-smi -L; exit 0; }
{ nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader; date -u; } > $R/gpu.txt 2>&1
timeout 130 python3 -m pytest -n 2 -v -rA -p no:cacheprovider tests/test_backward_gpu.py -k "w_item_variants or direct_weight" > $R/t_final.log 2>&1
echo "tests $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
T="saved_gu=1,bn_a=128,bn_x=256,w_direct=1,w_bf16=1"
timeout 95 python3 -m mok_kernels.bench --pass bwd --model kimi-k2,glm-5 --ep 8 --rank 0 \
  --tokens 4096 --routing uniform --capacity 1.0 --minibatch 4096 --comm-sms 32 \
  --systems mok,gemm-only --bwd-tiles "$T;$T,w_tma=1" \
  --out calibration/runs/h200/bwd_final_s30.jsonl > $R/bwd_final.log 2>&1
echo "bench exit $? $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
cp calibration/runs/h200/bwd_final_s30.jsonl $R/ 2>/dev/null
grep -hE " passed| failed" $R/t_*.log | tail -n 2
grep -hE "FAILED|bit for bit" $R/t_*.log | cut -c1-160 | head -14
grep -hE " ms |FAILED|Error" $R/bwd_*.log | cut -c1-200 | tail -n 8; cat $R/gpu.txt
