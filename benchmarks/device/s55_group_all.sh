#!/bin/bash
# Prepared in session 54 (an H100 or H200, <= 300 s a part; PART=a or b): group_m 8 against 1 on
# every kernel-runnable preset at EP 8 and 256 / 1,024 / 4,096 tokens per GPU. Session 54 read
# group_m 8 at 0.937-1.018x on the presets just under tiles.L2_SPILL_MIB and 0.97x on
# gpt-oss-120b (32 MiB), over two H100 runs and one H200 run (docs/calibration.md "Session 54").
# The question: should the layer group wherever a local expert is expected to hold two or more
# row tiles (tiles.expected_row_tiles), whatever its weight size? Rule written before the runs:
# yes if, over both cards, the median of group_m 8 / 1 over those workloads is <= 0.99 and none
# reads over 1.02 (two H100 runs of the same workload differed by up to 0.036 in session 54);
# workloads of about one row tile an expert are reported, not ruled on. Uniform routing, pull /
# push, minibatch 2,048, each output checked against float32 (tile sweep).
A=deepseek-v3,kimi-k2,glm-4.5,glm-5,qwen3-235b-a22b,minimax-m2
B=qwen3-30b-a3b,qwen3-next-80b-a3b,gpt-oss-120b,llama4-maverick,mixtral-8x7b
W=
for m in $( [ "${PART:-a}" = a ] && echo ${A//,/ } || echo ${B//,/ } ); do
  for n in 256 1024 4096; do W=$W${W:+,}$m:8:$n; done
done
W=$W DEADLINE=${DEADLINE:-260} bash benchmarks/device/s53_group_ab.sh
