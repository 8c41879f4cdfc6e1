#!/bin/bash
# Prepared in session 25 for the next session with an nvidia-h200-x2 (two H200s, NVLink; <= 560 s;
# not run yet). Group mode has not run on real GPUs since 2026-12-01 00:04 UTC; session 25
# changed its overflow handling (every rank fails a pass a peer overflowed), the bench's capture
# order (after every rank passed its eager check) and group_check's layer closing. (1) The
# group check and the real-GPU tests; (2) grid F, registered before the run
# (calibration/predictions/h200x2_grid_f_2026-12-02.jsonl, h200-hgx8's shipped parameters):
# qwen3-30b, qwen3-next and llama4-maverick (never run on two GPUs) at 256 / 2,048 / 8,192
# tokens, uniform and zipf, pull / push x push / pull, minibatch 2,048, 16 / 32 comm SMs.
# Registered again in session 41 for the senders' push that copies runs: h200x2_grid_f_2026-12-04
# .jsonl (the same grid; report both, the newer for the kernel that runs).
# On two H100s (nvidia-h100-x2) the records name h100-hgx8 and meet
# calibration/predictions/h100x2_grid_f_2026-12-06.jsonl (benchmarks/cpu/register_h100_boxes_s59.sh).
# Report: `python -m calibration.registered PRED calibration/runs/h200x2/bench_f.jsonl` (and
# `python -m calibration.report_h200x2`) before any refit.
export PYTHONPATH=.
T0=$(date +%s); R=$OUT/s26x; mkdir -p $R
{ nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader; nvidia-smi topo -m; date -u; } \
  > $R/gpu.txt 2>&1
timeout 120 python3 -m mok_kernels.group_check --gpus 2 > $R/group_check.log 2>&1
echo "group_check exit $? $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
timeout 150 python3 -m pytest -v -p no:cacheprovider tests/test_kernels_gpu.py -k real_gpus \
  > $R/t_real_gpus.log 2>&1
echo "tests exit $? $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
timeout 60 python3 calibration/nvlink_bench.py --gpus 2 --only nccl --out $R/nvlink_micro_nccl.jsonl \
  > $R/nccl.log 2>&1   # session 52: NCCL's all-to-all, one peer (nccl_peer_gbps; fit_fabric)
echo "nccl micro exit $? $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
REM=$(( 550 - ($(date +%s) - T0) ))
timeout $REM python3 -m mok_kernels.bench --gpus 2 \
  --model qwen3-30b-a3b,qwen3-next-80b-a3b,llama4-maverick --tokens 256,2048,8192 \
  --routing uniform,zipf:1.2 --dispatch pull,push --combine push,pull --minibatch 2048 \
  --comm-sms 16,32 --iters 8 --timeout 90 --out $R/bench_f.jsonl > $R/bench_f.log 2>&1
echo "grid F exit $? $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
tail -n 5 $R/group_check.log; grep -E "PASSED|FAILED|ERROR|passed|failed" $R/t_real_gpus.log | tail -5
tail -n 8 $R/bench_f.log; cat $R/gpu.txt | tail -4
