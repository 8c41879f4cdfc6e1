#!/bin/bash
# Usage: [LIMIT=560] [FROM=1] [STEPS="autograd kernels backward accept fp8 gluon_fp8"]
#        bash benchmarks/device/s65_gpu_suite.sh TAG (any Hopper card)
# The GPU suites after sessions 65-66's host-side argument checks (MoKLayer, KernelConfig, the
# float32 reference, mok_moe / MegakernelForward, LocalGroup, parse_tiles), in the order STEPS
# names them: autograd, tests/test_kernels_gpu.py from its test number FROM on, backward,
# acceptance, FP8, Gluon FP8, in steps under LIMIT s; logs and one summary line a step under
# $OUT/TAG.
R=$OUT/${1:?tag}; LIMIT=${LIMIT:-560}
source benchmarks/device/pytest_steps.sh
kernels() {
  python3 -m pytest -q -p no:cacheprovider --collect-only tests/test_kernels_gpu.py 2>/dev/null \
    | grep "::" | tail -n +${FROM:-1} > $R/kernels_ids.txt
  readarray -t IDS < $R/kernels_ids.txt     # (node ids may hold spaces)
  echo "kernels from ${FROM:-1}: ${#IDS[@]} tests" >> $R/summary.log
  if [ ${#IDS[@]} -gt 0 ]; then step kernels "${IDS[@]}"; else echo "kernels: none collected" >> $R/summary.log; fi
}
for s in ${STEPS:-autograd kernels backward accept fp8 gluon_fp8}; do
  case $s in
    kernels) kernels ;;
    autograd|backward|accept|fp8|gluon_fp8) step $s tests/test_${s}_gpu.py ;;
    *) echo "unknown step $s" >> $R/summary.log ;;
  esac
done
cat $R/summary.log
