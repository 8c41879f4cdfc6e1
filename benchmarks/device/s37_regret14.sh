#!/bin/bash
# Prepared in session 36, run in session 37 (nvidia-h200, 34 s): seed 14's regret case, the comm-SM
# response. syn14-h3328-i1280-e256-k7-s1, EP 16 emulated, 6,144 tokens, uniform (seed 14), pull
# dispatch, push and pull combine, minibatch 4,096, comm SMs 8, 12, 16, 24, 32, capacity 1.0,
# ring 131,072 rows, beside the same rank's GEMMs alone; the grid twice (two processes), so the
# run-to-run spread is in the records. Session 36 measured pull/push 2.649 ms at 8 comm SMs and
# 2.184 at 32, where the model reads both 2.22: whether the loss grows smoothly as the copy nears
# the GEMMs (a rate: copies slowed beside GEMMs) or only at balance (a per-minibatch coupling).
# Predictions registered first: calibration/predictions/h200_regret14_2026-12-03.jsonl.
# Report (each pass alone: a prediction meets one run): python -m calibration.registered
#   calibration/predictions/h200_regret14_2026-12-03.jsonl calibration/runs/h200_drawn/regret14.jsonl
#   --by combine,comm_sms (pass 1; pass 2 in regret14_repeat.jsonl)
export PYTHONPATH=.
R=$OUT/s37r; mkdir -p $R; T0=$(date +%s)
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo "not an H200"; exit 0; }
{ nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader; date -u; } > $R/gpu.txt
A="--gpus 0 --ep 16 --model calibration/drawn_shapes/seed14/syn14-h3328-i1280-e256-k7-s1.toml
   --tokens 6144 --routing uniform --seed 14 --dispatch pull --combine push,pull --minibatch 4096
   --comm-sms 8,12,16,24,32 --capacity 1.0 --macrobatch 131072"
for pass in 1 2; do
  timeout 200 python3 -m mok_model.cli bench $A --systems mok,gemm-only \
    --note "session 37 regret-case comm-SM response, pass $pass" \
    --out $R/regret14.jsonl > $R/pass$pass.log 2>&1
  echo "pass $pass exit $? at $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
done
cat $R/gpu.txt; tail -n 15 $R/pass2.log; wc -l $R/regret14.jsonl
