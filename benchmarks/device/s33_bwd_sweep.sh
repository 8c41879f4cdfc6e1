#!/bin/bash
# Session 33: the training path's backward (the layer's training tiles: saved g/u, A items of
# 256 columns where 256 divides the padded I, else 128; weight gradients written directly in
# bf16) across the kernel-runnable model presets, beside the same rank's backward GEMMs alone,
# so the model gets a training-backward group fitted and held out by model (issue 14 point 4).
# EP 8 every preset, EP 32 where the experts divide; 1,024 / 4,096 tokens; uniform and zipf:1.2;
# rank 0 emulated; one process per preset so one refusal loses only that preset. nvidia-h200.
# Predictions registered before the run (bwd-train group fitted on kimi-k2 / glm-5 only):
# calibration/predictions/h200_bwd_train_2026-12-03.jsonl; report them first with
# `python -m calibration.registered PRED calibration/runs/h200/bwd_train_s33.jsonl --by model,tokens`.
# Run in session 34 (s34_run.sh): the first eight EP-8 presets, to deepseek-v3, are in
# calibration/runs/h200/bwd_train_s33.jsonl; a second run of them would measure those runs twice
# (the registered report drops runs measured twice): time only the rest, registered anew.
export PYTHONPATH=.
T0=$(date +%s); R=$OUT/s33s; mkdir -p $R
END=${BWD_END:-$(( T0 + 240 ))}   # a caller running this after other work passes its own end
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo "not an H200"; exit 0; }
{ nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader; date -u; } > $R/gpu.txt 2>&1
TRAIN="saved_gu=1,bn_a=256,a_epi=128,bn_x=256,w_direct=1,w_bf16=1"
NARROW="saved_gu=1,bn_a=128,bn_x=256,w_direct=1,w_bf16=1"     # 256 does not divide the padded I
K="--rank 0 --routing uniform,zipf:1.2 --capacity 1.0 --minibatch 4096 --comm-sms 32 --systems mok,gemm-only"
run() {  # EP MODEL TILES
  LEFT=$(( END - $(date +%s) ))
  [ $LEFT -lt 30 ] && { echo "skipped $2 EP $1 (deadline)" >> $R/gpu.txt; return; }
  timeout $(( LEFT < 120 ? LEFT : 120 )) python3 -m mok_kernels.bench --pass bwd --model $2 --ep $1 --tokens 1024,4096 $K \
    --bwd-tiles "$3" --out $R/bwd_train_s33.jsonl >> $R/sweep.log 2>&1
  echo "$2 EP $1 exit $? at $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
}
for M in qwen3-235b-a22b minimax-m2 glm-4.5 qwen3-30b-a3b qwen3-next-80b-a3b llama4-maverick \
         mixtral-8x7b deepseek-v3 kimi-k2 glm-5; do run 8 $M $TRAIN; done
run 8 gpt-oss-120b $NARROW
for M in qwen3-235b-a22b minimax-m2 glm-4.5 deepseek-v3; do run 32 $M $TRAIN; done
grep -hE " ms |FAILED|Error|error" $R/sweep.log | cut -c1-180 | tail -n 30; cat $R/gpu.txt
wc -l $R/bwd_train_s33.jsonl
