#!/bin/bash
# Prepared in session 30, not run (no device time left): the W loop warp-specialized (Triton
# 3.6's Hopper pass: a TMA producer warp, MMA consumer warpgroups), as BackwardTiles(w_ws=1)
# with w_tma=1, from benchmarks/device/s31_w_ws.patch (interpreter-checked at tiny shapes).
# nvidia-h200, <= 520 s: (1) the patch applied; tests/test_backward_gpu.py -k w_item_variants
# (two workers); (2) timed, alone: the training tiles, + w_tma, + w_tma,w_ws, kimi-k2 / glm-5
# EP 8 rank 0, 4,096 tokens, beside the GEMMs alone; (3) kimi-k2's A items alone (diag=3) and
# A + X (diag=1) at minibatch 1,024 and 4,096 (the pull's exposed share). If w_ws helps, commit the patch with the
# records; if it fails to compile or is slower, say so in NOTES and drop the patch.
export PYTHONPATH=.
T0=$(date +%s); R=$OUT/s31ws; mkdir -p $R calibration/runs/h200
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo "not an H200"; nvidia-smi -L; exit 0; }
patch -p1 < benchmarks/device/s31_w_ws.patch > $R/patch.log 2>&1 || { cat $R/patch.log; exit 1; }
{ nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader; date -u; } > $R/gpu.txt 2>&1
timeout 200 python3 -m pytest -n 2 -v -rA -p no:cacheprovider tests/test_backward_gpu.py -k "w_item_variants" > $R/t_ws.log 2>&1
echo "tests $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
T="saved_gu=1,bn_a=128,bn_x=256,w_direct=1,w_bf16=1"
timeout 150 python3 -m mok_kernels.bench --pass bwd --model kimi-k2,glm-5 --ep 8 --rank 0 \
  --tokens 4096 --routing uniform --capacity 1.0 --minibatch 4096 --comm-sms 32 \
  --systems mok,gemm-only --bwd-tiles "$T;$T,w_tma=1;$T,w_tma=1,w_ws=1" \
  --out $R/bwd_ws.jsonl > $R/bwd_ws.log 2>&1
echo "bench exit $? $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
# the A and X items' share: A alone (diag=3), A + X (diag=1), whole, at minibatch 1,024 / 4,096
timeout 120 python3 -m mok_kernels.bench --pass bwd --model kimi-k2 --ep 8 --rank 0 \
  --tokens 4096 --routing uniform --capacity 1.0 --minibatch 1024,4096 --comm-sms 32 \
  --systems mok --bwd-tiles "$T,diag=3;$T,diag=1;$T" --out $R/bwd_ax.jsonl > $R/bwd_ax.log 2>&1
echo "bench A/X exit $? $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
grep -hE " passed| failed" $R/t_*.log | tail -n 2
grep -hE "FAILED|Error|bit for bit" $R/t_*.log | cut -c1-160 | head -14
grep -hE " ms |FAILED|Error" $R/bwd_*.log | cut -c1-200 | tail -n 8; cat $R/gpu.txt
