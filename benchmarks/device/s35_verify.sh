#!/bin/bash
# Session 35 (nvidia-h200, <= ~560 s): the constexpr mode words (commit after 3769d3a) checked:
# output bits of the committed kernel and of the runtime-int kernel before it (a sed on a copy),
# then the forward megakernel's GPU tests (test_kernels_gpu, test_random_shapes_gpu,
# test_knobs_gpu) on the committed kernel.
export PYTHONPATH=.
R=$OUT/s35v; mkdir -p $R; T0=$(date +%s)
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo "not an H200"; exit 0; }
rm -rf /tmp/old && mkdir /tmp/old && cp -r mok_kernels mok_model benchmarks calibration /tmp/old/
sed -i 's/PUSH_DISPATCH: tl.constexpr, PULL_COMBINE: tl.constexpr,/PUSH_DISPATCH, PULL_COMBINE,/; s/WORK_OFF, JOIN: tl.constexpr,/WORK_OFF, JOIN,/' /tmp/old/mok_kernels/megakernel.py
grep -c "PUSH_DISPATCH: tl.constexpr" mok_kernels/megakernel.py /tmp/old/mok_kernels/megakernel.py > $R/bits.log
timeout 120 python3 benchmarks/device/s35_bits.py constexpr >> $R/bits.log 2>&1
( cd /tmp/old && timeout 120 python3 benchmarks/device/s35_bits.py runtime ) >> $R/bits.log 2>&1
echo "bits done at $(( $(date +%s) - T0 )) s" >> $R/bits.log
python3 - $R/bits.log >> $R/bits.log <<'PY'
import sys, re
d = {}
for line in open(sys.argv[1]):
    m = re.match(r"\[(\w+)\] (.*): ([0-9a-f]{16})$", line.strip())
    if m:
        d.setdefault(m.group(2), {})[m.group(1)] = m.group(3)
same = sum(1 for v in d.values() if len(v) == 2 and len(set(v.values())) == 1)
print(f"bitwise identical across sources: {same} of {len(d)} settings")
for shape in sorted({k.split(' ')[0] for k in d}):
    digests = {x for k, v in d.items() if k.startswith(shape + ' ') for x in v.values()}
    print(f"{shape}: {len(digests)} distinct digest(s) over every mode, comm SMs and source")
PY
[ "${BITS_ONLY:-0}" = 1 ] && { tail -n 40 $R/bits.log; exit 0; }
LEFT=$(( 560 - ($(date +%s) - T0) ))
timeout $LEFT python3 -m pytest -q -x tests/test_kernels_gpu.py tests/test_random_shapes_gpu.py \
  tests/test_knobs_gpu.py > $R/gpu_tests.log 2>&1
echo "tests exit $? at $(( $(date +%s) - T0 )) s" >> $R/gpu_tests.log
tail -n 30 $R/bits.log; tail -n 15 $R/gpu_tests.log
