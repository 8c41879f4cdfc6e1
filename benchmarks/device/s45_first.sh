#!/bin/bash
# Prepared in session 44 (nvidia-h200, <= 560 s), not yet run: the forward GPU suites session
# 44's call 5 did not finish after the buffers refactor (mok_kernels/buffers.py sizes the ring,
# staging rows and split_dn workspace; host-side only), with disjoint keyword filters (call 5's
# k2 overlapped k1 and its k3 excluded most tests): test_kernels_gpu in three streams, the FP8
# suite and the autograd / Hugging Face layers in two.
R=$OUT/s45a; LIMIT=${LIMIT:-560}; source benchmarks/device/pytest_steps.sh
K=tests/test_kernels_gpu.py
SET="bench or split or tma or grouped or skip"
step k1 $K -k "local_group" &
step k2 $K -k "not local_group and ($SET)" &
step k3 $K -k "not local_group and not ($SET)" &
step fp8 tests/test_fp8_gpu.py &
step auto tests/test_autograd_gpu.py &
wait
tar -czf $OUT/s45a.tgz -C $OUT s45a
cat $R/summary.log; grep -h "FAILED\|Error" $R/*.log | head -20
