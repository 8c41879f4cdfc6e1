#!/bin/bash
# Session 19, last device call (nvidia-h200, <= 240 s). (1) Six layer shapes drawn by the seeded
# generator (python -m calibration.draw_shapes --seed 5 --count 6: calibration/drawn_shapes/seed5/),
# five workloads each at token counts no fit has seen (256, 1024, 2304, 4608), four knob
# settings; predictions registered before the run with the parameters refitted after the chain's
# tail-wave change (calibration/predictions/h200_drawn5_2026-12-01.jsonl): the blind test of that
# refit and the first sweep of the late-claim kernel. (2) A first look at a work-list lag of two:
# a copy of this tree whose list puts minibatch i's down items after minibatch i+2's gate/up
# items instead of i+1's (so a down item waits less for its row tile), against this tree, on the
# narrow-expert minibatch workload of s18_minibatch.sh (syn4-h2560-i448, EP 8, 1,792 tokens); its kernel tests (one shard) first.
# Untimed in parallel: compile warm-up and the lag tree's tests. Timed, alone: the sweep, then the
# two trees interleaved (this, lag, this, lag).
export PYTHONPATH=.
T0=$(date +%s); R=/tmp/s19/r6; J=/tmp/junk6; mkdir -p $R $J
{ nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader; date -u; } > $R/gpu.txt 2>&1
rm -rf /tmp/lag && cp -r . /tmp/lag && sed -i 's|sec // 2 - (sec % 2)|sec // 2 - 2 * (sec % 2)|' \
  /tmp/lag/mok_kernels/megakernel.py && grep -c 'sec // 2 - 2 \* (sec % 2)' /tmp/lag/mok_kernels/megakernel.py > $R/lag_edits.txt
SH=$(ls calibration/drawn_shapes/seed5/*.toml | paste -sd,)
A="--shapes $SH --per-shape 5 --tokens 256,1024,2304,4608 --seed 5"
for f in ${SH//,/ }; do
  timeout 130 python3 -m mok_kernels.space_sweep $A --models $f --compile-only > $J/$(basename $f).log 2>&1 &
done
S4=calibration/drawn_shapes/seed4/syn4-h2560-i448-e32-k6.toml
B="python3 -m mok_kernels.bench --rank 0 --combine push --capacity 1.0 --systems mok"
G="--routing uniform --dispatch pull --minibatch 512,1024,2048,4096 --comm-sms 32"
for tree in . /tmp/lag; do
  (cd $tree && timeout 130 $B --model $S4 --ep 8 --tokens 1792 $G --out $J/w.jsonl > /dev/null 2>&1) &
done
(cd /tmp/lag && timeout 130 python3 -m pytest -q -rA tests/test_kernels_gpu.py -k "matches_reference" -x \
   > $R/t_lag.log 2>&1) &
wait
echo "warm-up $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
REM=$(( 175 - ($(date +%s) - T0) ))
timeout $REM python3 -m mok_kernels.space_sweep $A --out $R/drawn5.jsonl --deadline-s $(( REM - 10 )) \
  > $R/drawn5.log 2>&1
echo "sweep $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
for rep in 1 2; do
  for tree in . /tmp/lag; do
    tag=$([ $tree = . ] && echo lag1 || echo lag2)
    (cd $tree && timeout 15 $B --model $S4 --ep 8 --tokens 1792 $G --out $R/${tag}_$rep.jsonl > /dev/null 2>&1)
  done
done
echo "end $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
tar czf $OUT/drawn5.tgz -C /tmp/s19 r6
