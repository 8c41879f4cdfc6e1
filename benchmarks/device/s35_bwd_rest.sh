#!/bin/bash
# Session 35 (nvidia-h200, <= ${TOTAL:-260} s): the training backward's presets session 34 did not
# reach (s33_bwd_sweep.sh's list after deepseek-v3 EP 8), beside the same rank's backward GEMMs
# alone. Registered before the run: calibration/predictions/h200_bwd_train_rest_2026-12-03.jsonl
# (shipped model) and ..._candidate_... (the shape-efficiency backward, not shipped). Records:
# $OUT/s35b/bwd_train_s35.jsonl (copy to calibration/runs/h200/).
export PYTHONPATH=.
T0=$(date +%s); R=$OUT/s35b; mkdir -p $R
END=$(( T0 + ${TOTAL:-260} ))
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo "not an H200"; exit 0; }
{ nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader; date -u; } > $R/gpu.txt 2>&1
TRAIN="saved_gu=1,bn_a=256,a_epi=128,bn_x=256,w_direct=1,w_bf16=1"
NARROW="saved_gu=1,bn_a=128,bn_x=256,w_direct=1,w_bf16=1"     # 256 does not divide the padded I
K="--rank 0 --routing uniform,zipf:1.2 --capacity 1.0 --minibatch 4096 --comm-sms 32 --systems mok,gemm-only"
run() {  # EP MODEL TILES
  LEFT=$(( END - $(date +%s) ))
  [ $LEFT -lt 30 ] && { echo "skipped $2 EP $1 (deadline)" >> $R/gpu.txt; return; }
  timeout $(( LEFT < 120 ? LEFT : 120 )) python3 -m mok_kernels.bench --pass bwd --model $2 --ep $1 --tokens 1024,4096 $K \
    --bwd-tiles "$3" --out $R/bwd_train_s35.jsonl >> $R/sweep.log 2>&1
  echo "$2 EP $1 exit $? at $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
}
for M in kimi-k2 glm-5; do run 8 $M $TRAIN; done
run 8 gpt-oss-120b $NARROW
for M in qwen3-235b-a22b minimax-m2 glm-4.5 deepseek-v3; do run 32 $M $TRAIN; done
grep -hE " ms |FAILED|Error|error" $R/sweep.log | cut -c1-180 | tail -n 30; cat $R/gpu.txt
wc -l $R/bwd_train_s35.jsonl
