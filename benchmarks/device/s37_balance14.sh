#!/bin/bash
# Session 37 (nvidia-h200, <= 580 s): what the loss near balance answers to. Seed 14's regret case
# (syn14-h3328-i1280-e256-k7-s1, EP 16 emulated, 6,144 tokens, uniform, seed 14) measured pull/push
# 2.644 ms at 8 comm SMs and 2.200 at 12, where both engines read 2.22 (regret14.jsonl). Here:
# pull dispatch, push and pull combine, minibatch 2,048-16,384 (the minibatch count) x comm SMs
# 6-16 (the copy-to-GEMM ratio), capacity 1.0, ring 131,072 rows, then the grid again (a second
# process: the run-to-run spread). A loss that follows the ratio at every minibatch is a rate; one
# that grows with the minibatch count is a per-minibatch coupling.
# Predictions registered first: calibration/predictions/h200_balance14_2026-12-03.jsonl.
# With the time left: tests/test_backward_gpu.py's last 20 tests (w_direct, w_tma; session 37's
# first call ran the other 72, all passed).
export PYTHONPATH=.
R=$OUT/s37b; mkdir -p $R; T0=$(date +%s)
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo "not an H200"; exit 0; }
{ nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader; date -u;
  git log -1 --format=%H; } > $R/gpu.txt
A="--gpus 0 --ep 16 --model calibration/drawn_shapes/seed14/syn14-h3328-i1280-e256-k7-s1.toml
   --tokens 6144 --routing uniform --seed 14 --dispatch pull --combine push,pull
   --minibatch 2048,4096,8192,16384 --comm-sms 6,8,10,12,16 --capacity 1.0 --macrobatch 131072"
for pass in 1 2; do
  timeout 200 python3 -m mok_model.cli bench $A --systems mok \
    --note "session 37 balance response, pass $pass" --out $R/balance14_pass$pass.jsonl \
    > $R/pass$pass.log 2>&1
  echo "pass $pass exit $? at $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
done
left=$(( 570 - ($(date +%s) - T0) ))
[ $left -gt 30 ] && timeout $left python3 -m pytest -q -p no:cacheprovider tests/test_backward_gpu.py \
  -k "direct_weight_gradients or w_item_variants" > $R/backward_rest.log 2>&1
echo "backward rest exit $? at $(( $(date +%s) - T0 )) s: $(tail -n 1 $R/backward_rest.log)" >> $R/gpu.txt
cat $R/gpu.txt; grep -h "FAILED\|Error" $R/backward_rest.log | head; tail -n 42 $R/pass1.log
