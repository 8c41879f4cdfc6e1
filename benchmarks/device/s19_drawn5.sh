#!/bin/bash
# Session 19, last device call (nvidia-h200, <= 200 s: 309 s of device time were left). (1) Six layer shapes drawn by the seeded
# generator (python -m calibration.draw_shapes --seed 5 --count 6: calibration/drawn_shapes/seed5/),
# five workloads each at token counts no fit has seen (256, 1024, 2304, 4608), four knob
# settings; predictions registered before the run with the parameters refitted after the chain's
# tail-wave change (calibration/predictions/h200_drawn5_2026-12-01.jsonl): the blind test of that
# refit and the first sweep of the late-claim kernel. (2) The work list's lag (KernelConfig
# list_lag 1, 2, 3: minibatch i's down items after minibatch i+L's gate/up items) on two narrow
# shapes across minibatch sizes, predictions registered first
# (calibration/predictions/h200_list_lag_{a,b}_2026-12-01.jsonl); its GPU tests first (lag 2 and 3
# against float32 and lag 1's bits). Untimed in parallel: those tests and compile warm-up.
# Timed, alone: the sweep (each MoK output checked against float32 before it is timed), then the
# lag grids (the lags of one configuration run back to back).
export PYTHONPATH=.
T0=$(date +%s); R=$OUT/r6; J=/tmp/junk6; mkdir -p $R $J   # results straight under $OUT
{ nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader; date -u; } > $R/gpu.txt 2>&1
SH=$(ls calibration/drawn_shapes/seed5/*.toml | paste -sd,)
A="--shapes $SH --per-shape 5 --tokens 256,1024,2304,4608 --seed 5"
for f in ${SH//,/ }; do
  timeout 110 python3 -m mok_kernels.space_sweep $A --models $f --compile-only > $J/$(basename $f).log 2>&1 &
done
S4=calibration/drawn_shapes/seed4/syn4-h2560-i448-e32-k6.toml
S3=calibration/drawn_shapes/seed3/syn3-h7168-i256-e256-k5-s1.toml
B="python3 -m mok_kernels.bench --rank 0 --capacity 1.0 --systems mok --routing uniform --dispatch pull"
G="--combine push --minibatch 512,1024,2048,4096 --comm-sms 32 --list-lag 1,2,3"
timeout 110 $B --model $S4 --ep 8 --tokens 1792 $G --out $J/w.jsonl > /dev/null 2>&1 &
timeout 110 $B --model $S3 --ep 32 --tokens 768 $G --out $J/w.jsonl > /dev/null 2>&1 &
timeout 110 python3 -m pytest -q -rA tests/test_kernels_gpu.py -k "list_lag" > $R/t_lag.log 2>&1 &
wait
echo "warm-up $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
REM=$(( 145 - ($(date +%s) - T0) ))
timeout $REM python3 -m mok_kernels.space_sweep $A --out $R/drawn5.jsonl --deadline-s $(( REM - 10 )) \
  > $R/drawn5.log 2>&1
echo "sweep $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
timeout 25 $B --model $S4 --ep 8 --tokens 1792 $G --out $R/list_lag.jsonl > $R/lag_a.log 2>&1
timeout 25 $B --model $S3 --ep 32 --tokens 768 $G --out $R/list_lag.jsonl > $R/lag_b.log 2>&1
echo "end $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
