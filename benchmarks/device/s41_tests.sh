#!/bin/bash
# Prepared in session 40 (nvidia-h200, <= 560 s): the GPU tests session 40's final kernel (the
# pipelined copy_rows) did not run; s40_c.sh ran the rest (108 passed). Four streams at once:
# Triton compiles on 16 CPU cores bound these tests.
R=$OUT/s41t; LIMIT=${LIMIT:-560}; source benchmarks/device/pytest_steps.sh
K=tests/test_kernels_gpu.py
step k_rest $K -k "pointer or list_lag or split_down or grouped_gate_up or tma_activation or bench or skip_gemm or group_on_real or torch_grouped or fused_schedule or missing_rank or overflow_on_one_rank or bits_identical_over_passes" &
step fp8_rest tests/test_fp8_gpu.py -k "variants or v3_to_v5 or default_agrees or load_weights or refused or grouped_gate_up or pointer" &
step gluon tests/test_gluon_fp8_gpu.py &
step rest tests/test_autograd_gpu.py tests/test_knobs_gpu.py tests/test_nvlink_bench.py &
wait
cat $R/summary.log; grep -h "FAILED\|Error" $R/*.log | head -20
