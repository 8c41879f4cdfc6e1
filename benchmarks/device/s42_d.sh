#!/bin/bash
# Session 42, call 4 (nvidia-h200, <= 400 s): the dn_blocks tests again (call 3's flattened-blocks
# cases passed gate/up blocks, a flag removed before that call; its virtual-rank default case asked
# for 16 comm programs of 16 a rank), and the GPU tests of what reads the layer's new choice:
# autograd / Hugging Face layers, knobs, the bench records. Logs in one archive.
R=$OUT/s42d; LIMIT=${LIMIT:-390}; source benchmarks/device/pytest_steps.sh
K=tests/test_kernels_gpu.py
step blocks $K -k "flattened_blocks or default_down_blocks" &
step auto tests/test_autograd_gpu.py &
step knobs tests/test_knobs_gpu.py &
step bench $K -k "bench or skip_gemm or every_model_preset" &
wait
tar -czf $OUT/s42d.tgz -C $OUT s42d
cat $R/summary.log; grep -h "FAILED\|Error" $R/*.log | head -20
