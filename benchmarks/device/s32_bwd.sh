#!/bin/bash
# Session 32, call 1: registers / spills / time of backward tile variants (kimi-k2 EP 8 rank 0,
# 4,096 tokens, training tiles), then ncu stall reasons of the A-only pass. nvidia-h200.
export PYTHONPATH=.
R=$OUT/s32; mkdir -p $R
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo "not an H200"; exit 0; }
T="saved_gu=1,bn_a=128,bn_x=256,w_direct=1,w_bf16=1"
V="$T;$T,bw=128;$T,bn_x=128;$T,bw=128,bn_x=128;$T,bn_a=256;$T,diag=3;$T,diag=3,bw=128,bn_x=128"
timeout 400 python3 benchmarks/device/s32_bwd_probe.py kimi-k2 4096 "$V" 2>&1 | tee $R/probe_kimi.log
timeout 100 ncu --clock-control none --kernel-name regex:mok_bwd --launch-skip 2 --launch-count 1 \
  --section WarpStateStats --section SourceCounters --section SchedulerStats \
  --import-source yes --export $R/bwd_d3 --force-overwrite \
  python3 -m mok_kernels.bench --pass bwd --model kimi-k2 --ep 8 --rank 0 --tokens 4096 \
  --routing uniform --capacity 1.0 --minibatch 4096 --comm-sms 32 --systems mok \
  --bwd-tiles "$T,diag=3" --out $R/x3.jsonl > $R/ncu_d3.log 2>&1
echo "ncu rc $?"
timeout 40 ncu --import $R/bwd_d3.ncu-rep --page source --csv --print-source sass,cuda \
  > $R/source_d3.csv 2> $R/source_d3.err; echo "source rc $?"
grep -E "Stall|Warp Cycles|Issued Warp|No Eligible|Active Warps|Eligible" $R/ncu_d3.log | head -30
ls -la $R
