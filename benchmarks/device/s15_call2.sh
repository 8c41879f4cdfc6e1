#!/bin/bash
# Session 15, device call 2 (nvidia-h200, <= 560 s). Untimed in parallel: the randomized-shape GPU
# tests (timed out in call 1's crowd) and compile warm-ups. Then timed, alone: the megakernel's
# GEMM phases (mok-gemm) of call 1's re-run workloads, the narrow-shape diagnosis
# (benchmarks/narrow_diag.py), and, if Nsight Compute is on the machine, one profiled MoK launch.
export PYTHONPATH=.
T0=$(date +%s); R=/tmp/s15/r2; J=/tmp/junk2; mkdir -p $R $J
{ nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader; date -u; which ncu nsys; } > $R/gpu.txt 2>&1
M="mixtral-8x7b,llama4-maverick,gpt-oss-120b"
WD="qwen3-30b-a3b:8:4096,qwen3-next-80b-a3b:8:4096,minimax-m2:8:4096,qwen3-30b-a3b:32:1024,kimi-k2:8:4096"
timeout 400 python3 -m pytest -q -rA --durations=5 tests/test_random_shapes_gpu.py > $R/t_random.log 2>&1 &
timeout 250 python3 benchmarks/narrow_diag.py --workloads $WD --iters 1 > $J/a.log 2>&1 &
timeout 250 python3 -m mok_kernels.space_sweep --gemm-phases --compile-only --models $M \
  --skip-done calibration/runs/h200_space/gemm_phases.jsonl > $J/b.log 2>&1 &
sleep 200
echo "warm-up $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
for f in $J/*.log; do tail -n 2 $f; done > $R/warmup_tails.log 2>&1
timeout 120 python3 -m mok_kernels.space_sweep --gemm-phases --models $M \
  --skip-done calibration/runs/h200_space/gemm_phases.jsonl --out $R/gemm_phases_redo.jsonl \
  --deadline-s 100 > $R/gemm_phases_redo.log 2>&1
wait
echo "tests done $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
timeout 150 python3 benchmarks/narrow_diag.py --workloads $WD > $R/narrow_diag.log 2>&1
if which ncu > /dev/null 2>&1; then
  REM=$(( 545 - ($(date +%s) - T0) ))
  timeout $REM ncu --kernel-name regex:mok_kernel --launch-skip 3 --launch-count 1 \
    --section SpeedOfLight --section WarpStateStats --section MemoryWorkloadAnalysis \
    --section SchedulerStats python3 -m mok_kernels.bench --model qwen3-30b-a3b --ep 8 --rank 0 \
    --tokens 4096 --systems mok --minibatch 2048 --comm-sms 16 --capacity 1.0 --no-graph \
    --iters 1 --warmup 3 --out $J/ncu_scratch.jsonl > $R/ncu_qwen3_30b.txt 2>&1
fi
echo "end $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
tar czf $OUT/call2.tgz -C /tmp/s15 r2
