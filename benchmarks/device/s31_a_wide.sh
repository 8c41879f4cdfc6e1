#!/bin/bash
# Session 31, call 4 (nvidia-h200, <= 300 s). ncu (call 3) showed the A items (dA = dOut Wd^T
# and the SwiGLU backward) at 34% tensor-pipe use, 3.6 of kimi-k2's 13.9 ms, where X and W run
# at ~520 TF/s: the A loop's two N=64 dots a K step. BackwardTiles(a_wide=1): one N=128 dot.
# (1) tests/test_backward_gpu.py -k "w_item_variants and a_wide" (float32 tolerance, bits on a
# second pass, beside the two-dot path); (2) training tiles with and without a_wide, whole pass
# and A alone (diag=3), kimi-k2 / glm-5 EP 8 rank 0, 1,024 / 4,096 tokens, beside the GEMMs
# alone; (3) ncu of the a_wide A-only pass (tensor pipe, spills).
export PYTHONPATH=.
# a_wide was in the working tree when this ran; dropped after (no gain on the whole pass:
# mok_kernels/NOTES.md, Session 31): rerun with its patch applied
git apply benchmarks/device/s31_a_wide.patch || exit 1
[ -d s31snap ] && cp -r s31snap/. . && rm -rf s31snap     # HEAD's versions of others' files
T0=$(date +%s); R=$OUT/s31aw; mkdir -p $R
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo "not an H200"; exit 0; }
timeout 150 python3 -m pytest -n 2 -v -rA -p no:cacheprovider tests/test_backward_gpu.py -k "w_item_variants and a_wide" > $R/t_aw.log 2>&1
echo "tests $(( $(date +%s) - T0 )) s" > $R/gpu.txt
T="saved_gu=1,bn_a=128,bn_x=256,w_direct=1,w_bf16=1"
timeout 150 python3 -m mok_kernels.bench --pass bwd --model kimi-k2,glm-5 --ep 8 --rank 0 \
  --tokens 1024,4096 --routing uniform --capacity 1.0 --minibatch 4096 --comm-sms 32 \
  --systems mok,gemm-only --bwd-tiles "$T;$T,a_wide=1;$T,diag=3;$T,a_wide=1,diag=3" \
  --out $R/bwd_awide.jsonl > $R/bwd_awide.log 2>&1
echo "bench exit $? $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
timeout 60 ncu --clock-control none --kernel-name regex:mok_bwd --launch-skip 2 --launch-count 1 \
  --section SpeedOfLight --section MemoryWorkloadAnalysis --section LaunchStats --section ComputeWorkloadAnalysis \
  python3 -m mok_kernels.bench --pass bwd --model kimi-k2 --ep 8 --rank 0 --tokens 4096 \
  --routing uniform --capacity 1.0 --minibatch 4096 --comm-sms 32 --systems mok \
  --bwd-tiles "$T,a_wide=1,diag=3" --out $R/ncu_x.jsonl > $R/ncu_aw3.log 2>&1
echo "ncu exit $? $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
grep -hE " passed| failed|FAILED|Error|bit for bit" $R/t_aw.log | cut -c1-160 | tail -n 8
grep -hE " ms |FAILED|Error" $R/bwd_awide.log | cut -c1-150
grep -E "Duration|Compute \(SM\)|L2 Cache Thr|Spilling Requests  |Registers Per|Tensor is" $R/ncu_aw3.log; cat $R/gpu.txt
