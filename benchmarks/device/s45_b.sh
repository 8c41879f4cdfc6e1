#!/bin/bash
# Session 45, call 2 (nvidia-h200, <= 560 s): (1) where a forward spends beside its megakernel,
# timed as the bench times the pass (graph replay): schedule build, launch, epilogue each alone,
# and torch's sum over the same slots (benchmarks/phase_graph.py, the layer's own knobs);
# (2) random shapes of a seed offset no run drew (45000), five processes at once.
export PYTHONPATH=.
mkdir -p $OUT/s45b; git log -1 --format=%H > $OUT/s45b/commit.txt
timeout 200 python3 benchmarks/phase_graph.py --workloads \
  qwen3-30b-a3b:8:4096,qwen3-next-80b-a3b:8:4096,kimi-k2:8:4096,glm-5:8:1024,gpt-oss-120b:16:2048,qwen3-30b-a3b:32:256,kimi-k2:16:128 \
  > $OUT/s45b/phase_graph.md 2>&1
cat $OUT/s45b/phase_graph.md
R=$OUT/s45b/rand; LIMIT=330; source benchmarks/device/pytest_steps.sh
export MOK_RANDOM_SHAPES_SEED=45000
T=tests/test_random_shapes_gpu.py
MOK_RANDOM_SHAPES_COUNT=30 step fwd $T -k "forward" &
step fp8 $T -k "test_random_shape_fp8" &
step gluon $T -k "gluon" &
step bwd $T -k "backward" &
step group $T -k "local_group" &
wait
cat $R/summary.log; grep -h "FAILED\|Error" $R/*.log | head -20
