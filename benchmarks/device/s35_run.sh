#!/bin/bash
# Session 35, first call (nvidia-h200, ~370 s): the push/push probe (s34_push_probe.py, <= 95 s;
# a diagnostic log), then the rest of the training-backward sweep (s35_bwd_rest.sh, registered).
export PYTHONPATH=.
mkdir -p $OUT/s34p; S=$(date +%s)
timeout 95 python3 benchmarks/device/s34_push_probe.py 70 > $OUT/s34p/push_probe.log 2>&1
echo "probe exit $? at $(( $(date +%s) - S )) s" >> $OUT/s34p/push_probe.log
TOTAL=260 bash benchmarks/device/s35_bwd_rest.sh
cat $OUT/s34p/push_probe.log
