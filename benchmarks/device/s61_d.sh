#!/bin/bash
# Session 61 (either card, <= 300 s): where a push dispatch's time goes on seed 28's worst-read
# shapes (push ran up to 1.5x the model's time under hot / zipf routing at small H): the same
# knobs with pull and with push dispatch, each whole, without its copies, and with comm SMs that
# never join (benchmarks/narrow_diag.py). Everything lands in $OUT/s61d.tgz.
export PYTHONPATH=.
T0=$(date +%s); FINAL=$OUT; export OUT=/tmp/s61d; R=$OUT/s61d; mkdir -p $R
trap 'tar -czf $FINAL/s61d.tgz -C $OUT .' EXIT
{ nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader; date -u; } > $R/gpu.txt
D=calibration/drawn_shapes/seed28
timeout 150 python3 benchmarks/narrow_diag.py --dispatch pull,push --routing hot:0.1 --seed 28 \
  --workloads $D/syn28-h2560-i256-e16-k1.toml:4:4608,$D/syn28-h2816-i384-e64-k7.toml:16:2048 \
  --comm-sms 32 --minibatch 2048 > $R/hot.log 2>&1
timeout 100 python3 benchmarks/narrow_diag.py --dispatch pull,push --routing zipf:1.2 --seed 28 \
  --workloads $D/syn28-h2560-i448-e16-k2.toml:4:6144,qwen3-30b-a3b:8:4096 \
  --comm-sms 16 --minibatch 2048 > $R/zipf.log 2>&1
cat $R/*.log | cut -c1-170; echo "s61_d $(( $(date +%s) - T0 )) s"
