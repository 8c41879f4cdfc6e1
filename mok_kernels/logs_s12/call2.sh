#!/bin/bash
# session 12 call 2: GPU tests of the new defaults (parallel, untimed), then timed: fp8 tile sweep, space-sweep start
export PYTHONPATH=.
T0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader > $OUT/gpu.txt; date -u >> $OUT/gpu.txt
timeout 320 python3 -m pytest -q -rA tests/test_fp8_gpu.py -k "fp8_matches_references" > $OUT/t_fp8_a.log 2>&1 &
timeout 320 python3 -m pytest -q -rA tests/test_fp8_gpu.py -k "not fp8_matches_references" > $OUT/t_fp8_b.log 2>&1 &
timeout 320 python3 -m pytest -q -rA tests/test_backward_gpu.py > $OUT/t_bwd.log 2>&1 &
timeout 320 python3 -m pytest -q -rA tests/test_kernels_gpu.py tests/test_fp8.py tests/test_backward_cpu.py > $OUT/t_bf16.log 2>&1 &
timeout 300 python3 -m mok_kernels.space_sweep --compile-only --models kimi-k2,qwen3-235b-a22b,gpt-oss-120b --deadline-s 240 > $OUT/space_compile.log 2>&1 &
wait
echo "phase A $(( $(date +%s) - T0 )) s" >> $OUT/gpu.txt
timeout 170 python3 -m mok_kernels.tile_sweep --precision fp8 --workloads kimi-k2:8:4096,glm-5:8:4096 --deadline-s 150 --out $OUT/tiles_fp8.jsonl > $OUT/tiles_fp8.log 2>&1
echo "tiles $(( $(date +%s) - T0 )) s" >> $OUT/gpu.txt
echo "end $(( $(date +%s) - T0 )) s" >> $OUT/gpu.txt
