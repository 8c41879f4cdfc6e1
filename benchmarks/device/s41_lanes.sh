#!/bin/bash
# Prepared in session 40 (nvidia-h200, <= 400 s): the push lanes' runs (KernelConfig.lane_runs)
# against float32 and the scanning lanes' bits (tests/test_kernels_gpu.py, beside), and the A/B
# of bits and time (s41_lanes.py). The flag stays off by default until both hold.
R=$OUT/s41l; LIMIT=${LIMIT:-400}; source benchmarks/device/pytest_steps.sh
export MOK_AB_LANE_RUNS=1     # the A/B probe: KernelConfig refuses lane_runs=True without it
step runs_tests tests/test_kernels_gpu.py -k "lanes_by_runs"      # first: the A/B times alone
P=${PROBE_S:-240}; timeout $((P + 60)) python3 benchmarks/device/s41_lanes.py $R/lanes.jsonl $P > $R/lanes.log 2>&1
echo "lanes: exit $?" >> $R/summary.log
cat $R/summary.log; grep -h "FAILED\|Error" $R/*.log | head; tail -n 25 $R/lanes.log | cut -c1-220
