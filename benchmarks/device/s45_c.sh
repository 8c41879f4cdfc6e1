#!/bin/bash
# Session 45, call 3 (nvidia-h200, <= 420 s): the schedule builder in 3 launches instead of 5
# (mok_kernels/schedule.py): its A/B against 54aa446's in one process (arrays bit for bit, then
# graph-replayed times), the passes' parts again (phase_graph.py, compare call 2), then its GPU
# tests: the builder against the tensor ops (9 cases, eager and graph), forward kernel tests and
# random forward / local-group draws, in parallel streams.
export PYTHONPATH=.
mkdir -p $OUT/s45c; git log -1 --format=%H > $OUT/s45c/commit.txt
timeout 90 python3 benchmarks/device/s45_sched_ab.py 54aa446 > $OUT/s45c/sched_ab.md 2>&1
cat $OUT/s45c/sched_ab.md
timeout 120 python3 benchmarks/phase_graph.py --workloads \
  qwen3-30b-a3b:8:4096,qwen3-next-80b-a3b:8:4096,gpt-oss-120b:16:2048,qwen3-30b-a3b:32:256,kimi-k2:16:128 \
  > $OUT/s45c/phase_graph.md 2>&1
cat $OUT/s45c/phase_graph.md
R=$OUT/s45c/tests; LIMIT=${LIMIT:-200}; source benchmarks/device/pytest_steps.sh
step sched tests/test_kernels_gpu.py -k "fused_schedule or bench" &
step k3 tests/test_kernels_gpu.py -k "not local_group and not (bench or split or tma or grouped or skip)" &
step group tests/test_kernels_gpu.py -k "local_group" &
MOK_RANDOM_SHAPES_COUNT=12 step fwd tests/test_random_shapes_gpu.py -k "forward" &
wait
cat $R/summary.log; grep -h "FAILED\|Error" $R/*.log | head -20
