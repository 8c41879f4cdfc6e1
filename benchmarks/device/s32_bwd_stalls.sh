#!/bin/bash
# Prepared in session 31, not run (no device time left): where the backward's A items stall.
# ncu on the A-only pass (diag=3; 3.6 ms, tensor pipe 34%, latency-bound at one 8-warp CTA an
# SM) and the whole pass, with warp-state sampling per source line (Triton keeps line info):
# the stall reasons of the A loop's loads, dots and the SwiGLU epilogue. nvidia-h200, <= 200 s.
export PYTHONPATH=.
R=$OUT/s32st; mkdir -p $R
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo "not an H200"; exit 0; }
T="saved_gu=1,bn_a=128,bn_x=256,w_direct=1,w_bf16=1"
for D in 3 0; do
  timeout 90 ncu --clock-control none --kernel-name regex:mok_bwd --launch-skip 2 --launch-count 1 \
    --section WarpStateStats --section SourceCounters --section SchedulerStats \
    --metrics smsp__pcsamp_warps_issue_stalled_long_scoreboard,smsp__pcsamp_warps_issue_stalled_barrier,smsp__pcsamp_warps_issue_stalled_wait,smsp__pcsamp_warps_issue_stalled_math_pipe_throttle,smsp__pcsamp_warps_issue_stalled_mio_throttle,smsp__pcsamp_warps_issue_stalled_short_scoreboard \
    --import-source yes --export $R/bwd_d$D --force-overwrite \
    python3 -m mok_kernels.bench --pass bwd --model kimi-k2 --ep 8 --rank 0 --tokens 4096 \
    --routing uniform --capacity 1.0 --minibatch 4096 --comm-sms 32 --systems mok \
    --bwd-tiles "$T,diag=$D" --out $R/x$D.jsonl > $R/ncu_d$D.log 2>&1
  echo "diag $D rc $?"
  timeout 40 ncu --import $R/bwd_d$D.ncu-rep --page source --csv --print-source sass,cuda \
    > $R/source_d$D.csv 2> $R/source_d$D.err; echo "source rc $?"
done
grep -E "Stall|Warp Cycles|Issued Warp|No Eligible|Active Warps" $R/ncu_d3.log | head -20
ls -la $R
