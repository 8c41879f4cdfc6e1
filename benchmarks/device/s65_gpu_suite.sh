#!/bin/bash
# Usage: [LIMIT=560] [FROM=44] bash benchmarks/device/s65_gpu_suite.sh TAG (any Hopper card)
# The forward GPU suite from test number FROM of tests/test_kernels_gpu.py on (session 64 ran the
# first 43 after its host-side MoKLayer checks), then the FP8, Gluon FP8, autograd, backward and
# acceptance suites, in steps under LIMIT s; logs and one summary line a step under $OUT/TAG.
R=$OUT/${1:?tag}; LIMIT=${LIMIT:-560}
source benchmarks/device/pytest_steps.sh
python3 -m pytest -q -p no:cacheprovider --collect-only tests/test_kernels_gpu.py 2>/dev/null \
  | grep "::" | tail -n +${FROM:-44} > $R/kernels_rest.txt
echo "kernels from ${FROM:-44}: $(wc -l < $R/kernels_rest.txt) tests" >> $R/summary.log
readarray -t IDS < $R/kernels_rest.txt     # (node ids may hold spaces)
if [ ${#IDS[@]} -gt 0 ]; then step kernels_rest "${IDS[@]}"; else echo "kernels_rest: none collected" >> $R/summary.log; fi
step accept tests/test_accept_gpu.py
step autograd tests/test_autograd_gpu.py
step fp8 tests/test_fp8_gpu.py
step gluon_fp8 tests/test_gluon_fp8_gpu.py
step backward tests/test_backward_gpu.py
cat $R/summary.log
