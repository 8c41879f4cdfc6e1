#!/bin/bash
# Session 37 (nvidia-h200, run in 62 s): the decode regret cases of seeds 2 and 3 (the tuner's pick
# measured 33-34% slower than the best of three configs), across every mode pair and comm SMs
# 8-64 at minibatch 4,096: syn2-h7936-i6848-e8-k1 (EP 4, 96 tokens) and syn3-h7936-i6336-e64-k1
# (EP 32, 128 tokens), uniform, seed 0, capacity 1.0, ring 131,072 rows, MoK and the GEMMs alone,
# each grid twice (two processes). Seeds 2-3 measured pull/push at 32-64 comm SMs ~0.30 ms where
# pull/pull at 8-16 ran 0.226 and the model read the reverse: is it the mode (comm SMs joining the
# compute) or the SMs left to the weight-bound GEMMs?
# Predictions registered first: calibration/predictions/h200_decode{2,3}_2026-12-03.jsonl.
export PYTHONPATH=.
R=$OUT/s37d; mkdir -p $R; T0=$(date +%s)
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo "not an H200"; exit 0; }
{ nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader; date -u; } > $R/gpu.txt
G="--gpus 0 --dispatch pull,push --combine push,pull --minibatch 4096 --comm-sms 8,16,32,64
   --capacity 1.0 --macrobatch 131072 --routing uniform --seed 0 --systems mok,gemm-only"
for pass in 1 2; do
  for w in "2 4 96 syn2-h7936-i6848-e8-k1" "3 32 128 syn3-h7936-i6336-e64-k1"; do
    set -- $w
    timeout 150 python3 -m mok_model.cli bench $G --ep $2 --tokens $3 \
      --model calibration/drawn_shapes/seed$1/$4.toml \
      --note "session 37 decode mode x comm SMs, seed $1, pass $pass" \
      --out $R/decode$1_pass$pass.jsonl > $R/decode$1_pass$pass.log 2>&1
    echo "seed $1 pass $pass exit $? at $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
  done
done
cat $R/gpu.txt; tail -n 17 $R/decode2_pass1.log; tail -n 17 $R/decode3_pass1.log
