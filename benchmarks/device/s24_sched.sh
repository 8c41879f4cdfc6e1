#!/bin/bash
# Ran on commit 348a018 (its benchmarks/schedule_ab.py and fused builder were reverted after this
# run: `git show 348a018`); logs in mok_kernels/logs_s24/sched/.
# Session 24, third device call (nvidia-h200, <= 540 s): the dispatch schedule in one cooperative
# launch (KernelConfig(fused_schedule=True), schedule.py builder "fused"; written this session,
# checked on the CPU only: Triton interpreter with one program, bit for bit against the tensor
# ops, and an sm_90 compile). (1) GPU tests: both Triton builders against the tensor ops, eagerly
# and replayed from a CUDA graph on fresh ids, 9 shapes (loops that wrap the grid, overflow,
# virtual ranks); forward passes with the fused schedule against float32; refused in group mode;
# and the existing schedule and forward tests. (2) `benchmarks/schedule_ab.py`: the schedule
# alone and the whole MoK pass, five kernels against one launch, interleaved, on seven workloads.
export PYTHONPATH=.
T0=$(date +%s); R=$OUT/s24s; mkdir -p $R
{ nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader; date -u; } > $R/gpu.txt 2>&1
timeout 240 python3 -m pytest -v -p no:cacheprovider tests/test_kernels_gpu.py \
  -k "schedule or megakernel_matches_reference or every_model_preset or capacity_overflow or bits_identical_over_runs or eight_virtual or hidden_sizes" > $R/t_sched.log 2>&1
echo "tests $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
timeout 240 python3 benchmarks/schedule_ab.py --out $R/schedule_ab.json > $R/schedule_ab.log 2>&1
echo "ab $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
