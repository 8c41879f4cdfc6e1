#!/bin/bash
# Session 40 (nvidia-h200, <= 560 s): the whole forward GPU suites on today's kernel (the comm
# copies' helper renamed gather_chunks; session 39's final kernel ran only its push-path subset).
# Five pytest streams at once: Triton compiles on 16 CPU cores bound these tests, not the GPU.
# A stream cut by the limit lists its unrun tests in its log; the next call runs them.
R=$OUT/s40t; LIMIT=${LIMIT:-560}; source benchmarks/device/pytest_steps.sh
K=tests/test_kernels_gpu.py
ids() { for t in "$@"; do printf "$K::%s " "$t"; done; }
step k1 $(ids test_megakernel_matches_reference test_pointer_weight_tiles_match_reference \
  test_list_lag_matches_reference_and_the_bits_of_lag_one test_group_on_real_gpus \
  test_small_ring_back_pressure test_eight_virtual_ranks_push_push test_bits_identical_over_runs \
  test_stalled_wait_raises test_capacity_overflow_raises test_default_trap_never_returns_output) &
step k2 $(ids test_every_model_preset_shape test_no_shared_expert_runs_no_shared_tiles \
  test_hidden_sizes_not_multiple_of_1024 test_pointer_weight_tiles_at_gpt_oss_shape \
  test_torch_grouped_matches_reference test_fused_schedule_equals_tensor_ops \
  test_local_group_matches_reference test_local_group_production_shape) &
step k3 $(ids test_local_group_ring_back_pressure_across_ranks \
  test_local_group_bits_identical_over_passes \
  test_local_group_list_lag_matches_reference_and_the_bits_of_lag_one \
  test_local_group_missing_rank_raises test_local_group_overflow_on_one_rank_fails_every_rank \
  test_bench_on_real_gpus test_auto_layer_after_swept_layers_on_real_gpus \
  test_bench_gemm_phases_record test_skip_gemm_diagnostic_runs_every_copy_and_writes_zeros \
  test_bench_records_name_the_split_the_layer_ran test_grouped_gate_up_order_matches_reference_and_bits \
  test_tma_activation_tiles_match_reference_and_bits test_split_down_chosen_from_the_shape \
  test_split_down_matches_reference_and_repeats_bits) &
step fp8 tests/test_fp8_gpu.py &
step random tests/test_random_shapes_gpu.py &
wait
cat $R/summary.log
grep -h "FAILED\|Error" $R/*.log | head -20
