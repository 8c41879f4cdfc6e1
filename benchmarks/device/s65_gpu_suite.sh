#!/bin/bash
# Usage: [LIMIT=560] [FROM=1] bash benchmarks/device/s65_gpu_suite.sh TAG (any Hopper card)
# The GPU suites after session 65's host-side argument checks (MoKLayer, KernelConfig, the
# float32 reference, mok_moe / MegakernelForward, LocalGroup, parse_tiles): autograd, then
# tests/test_kernels_gpu.py from its test number FROM on, backward, acceptance, FP8, Gluon FP8,
# in steps under LIMIT s; logs and one summary line a step under $OUT/TAG.
R=$OUT/${1:?tag}; LIMIT=${LIMIT:-560}
source benchmarks/device/pytest_steps.sh
step autograd tests/test_autograd_gpu.py
python3 -m pytest -q -p no:cacheprovider --collect-only tests/test_kernels_gpu.py 2>/dev/null \
  | grep "::" | tail -n +${FROM:-1} > $R/kernels_ids.txt
readarray -t IDS < $R/kernels_ids.txt     # (node ids may hold spaces)
echo "kernels from ${FROM:-1}: ${#IDS[@]} tests" >> $R/summary.log
if [ ${#IDS[@]} -gt 0 ]; then step kernels "${IDS[@]}"; else echo "kernels: none collected" >> $R/summary.log; fi
step backward tests/test_backward_gpu.py
step accept tests/test_accept_gpu.py
step fp8 tests/test_fp8_gpu.py
step gluon_fp8 tests/test_gluon_fp8_gpu.py
cat $R/summary.log
