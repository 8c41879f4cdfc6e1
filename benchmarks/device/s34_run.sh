#!/bin/bash
# Session 34 (nvidia-h200, <= ${TOTAL:-280} s): the push/push probe (s34_push_probe.py, <= 80 s;
# a diagnostic log), then the training-backward sweep (s33_bwd_sweep.sh, registered before the
# run) with whatever is left; presets it cannot start are listed as skipped in $OUT/s33s/gpu.txt.
export PYTHONPATH=.
S=$(date +%s); mkdir -p $OUT/s34p
timeout 95 python3 benchmarks/device/s34_push_probe.py 70 > $OUT/s34p/push_probe.log 2>&1
echo "probe exit $? at $(( $(date +%s) - S )) s" >> $OUT/s34p/push_probe.log
BWD_END=$(( S + ${TOTAL:-280} )) bash benchmarks/device/s33_bwd_sweep.sh
cat $OUT/s34p/push_probe.log
