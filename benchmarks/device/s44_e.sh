#!/bin/bash
# Session 44, call 5 (nvidia-h200, <= 560 s): the GPU suites after the layer sizes its ring and
# staging rows from mok_kernels/buffers.py (host-side sizes; the kernels' PTX unchanged): the
# whole of test_kernels_gpu in three streams, the random forward draws, autograd / Hugging Face
# layers, FP8. Five pytest streams at once (Triton compiles on 16 CPU cores bound them).
R=$OUT/s44e; LIMIT=${LIMIT:-560}; source benchmarks/device/pytest_steps.sh
K=tests/test_kernels_gpu.py
step k1 $K -k "local_group" &
step k2 $K -k "bench or split or tma or grouped or skip or lag" &
step k3 $K -k "not (local_group or bench or split or tma or grouped or skip or lag)" &
step rnd tests/test_random_shapes_gpu.py -k forward &
step auto tests/test_autograd_gpu.py tests/test_fp8_gpu.py &
wait
tar -czf $OUT/s44e.tgz -C $OUT s44e
cat $R/summary.log; grep -h "FAILED\|Error" $R/*.log | head -20
