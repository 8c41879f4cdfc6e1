#!/bin/bash
# Session 30, second device call (nvidia-h200, <= 580 s). (1) Untimed: the W item variants'
# GPU tests (tests/test_backward_gpu.py -k "w_item_variants": w_tma, w_group, against float32,
# twice for the bits, beside the one-tile pointer path). (2) Timed, alone: `mok bench --pass
# bwd`, kimi-k2 / glm-5 EP 8 rank 0, 4,096 tokens: the training tiles with W items of 2 / 4
# tiles (w_group; two stages: the in-loop store keeps the pipeline's buffers live) and with TMA,
# beside the GEMMs alone. (Third attempt: the second's in-loop store at w_group 1 ran out of
# shared memory at three stages; w_group 1 now stores after the loop, as before.) (A first attempt of this call, with a
# w_group that asked Triton to flatten the loop nest, failed to compile; its knob sweep,
# minibatch 1,024 / 2,048 x 16 / 32 comm programs, ran: calibration/runs/h200/bwd_knobs.jsonl.)
export PYTHONPATH=.
cp -r s30snap/* . 2>/dev/null   # HEAD versions of the files helpers are editing (+ this session's records.py line)
T0=$(date +%s); R=$OUT/s30b; mkdir -p $R calibration/runs/h200
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo "not an H200"; nvidia-smi -L; exit 0; }
{ nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader; date -u; } > $R/gpu.txt 2>&1
timeout 240 python3 -m pytest -n 2 -v -rA -p no:cacheprovider tests/test_backward_gpu.py -k "w_item_variants or direct_weight" > $R/t_variants.log 2>&1
echo "tests $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
T="saved_gu=1,bn_a=128,bn_x=256,w_direct=1,w_bf16=1"
B="python3 -m mok_kernels.bench --pass bwd --model kimi-k2,glm-5 --ep 8 --rank 0 --tokens 4096 --routing uniform --capacity 1.0"
REM=$(( 570 - ($(date +%s) - T0) ))
timeout $REM $B --minibatch 4096 --comm-sms 32 --systems mok,gemm-only \
  --bwd-tiles "$T;$T,w_tma=1;$T,w_stages=2;$T,w_group=2,w_stages=2;$T,w_group=4,w_stages=2;$T,w_tma=1,w_group=4,w_stages=2" \
  --out calibration/runs/h200/bwd_wgroup.jsonl > $R/bwd_wgroup.log 2>&1
echo "bench 1 exit $? $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
cp calibration/runs/h200/bwd_wgroup.jsonl $R/ 2>/dev/null
grep -hE "passed|failed" $R/t_*.log | tail -n 3
grep -hE "FAILED|Error|bit for bit" $R/t_*.log | cut -c1-200 | head -24
grep -hE " ms |FAILED|Error" $R/bwd_*.log | cut -c1-200 | tail -n 24; cat $R/gpu.txt
