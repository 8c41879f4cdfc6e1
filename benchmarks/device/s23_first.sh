#!/bin/bash
# Session 23 (2026-12-02), nvidia-h200, <= 590 s.
# (1) Kernel drift: 18 space-sweep workloads (14 at 64-256 tokens, 4 at 1K-8K; uniform and hot
#     routing, whose draws did not change since; zipf's popularity order did) re-timed at the
#     knobs of their 2026-12-01 03:08-03:15 records with today's kernel, beside the same rank's
#     GEMMs alone. Lines of s23_drift.txt: model ep tokens routing seed dispatch combine
#     minibatch comm_sms macrobatch capacity. Not registered: a check of the data, not the model.
# (2) Where the three 1.24-1.31x workloads of s22_auto spend their time (narrow_diag at their
#     best knobs of that run): minimax-m2 EP 16 4096, qwen3-235b EP 8 2048, glm-4.5 EP 32 6144.
export PYTHONPATH=.
T0=$(date +%s); R=$OUT/s23a; J=/tmp/junk23; mkdir -p $R $J
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader > $R/gpu.txt 2>&1
cmd() {  # one drift line -> the bench command
  read -r m ep n ro seed d c mb cs mac cap <<< "$1"
  echo "python3 -m mok_kernels.bench --rank 0 --model $m --ep $ep --tokens $n --routing $ro --seed $seed --dispatch $d --combine $c --minibatch $mb --comm-sms $cs --macrobatch $mac --capacity $cap --list-lag 1"
}
# compile everything in parallel first (one iteration, junk records)
while read -r line; do
  timeout 240 $(cmd "$line") --systems mok --iters 1 --warmup 0 --out $J/w.jsonl < /dev/null > /dev/null 2>&1 &
done < benchmarks/device/s23_drift.txt
for w in minimax-m2:16:4096:4096:2 qwen3-235b-a22b:8:2048:4096:4 glm-4.5:32:6144:8192:4; do  # the diag's kernels
  IFS=: read -r m ep n mb lag <<< "$w"
  timeout 240 python3 benchmarks/narrow_diag.py --workloads $m:$ep:$n --comm-sms 32,64 --minibatch $mb \
    --list-lag $lag --iters 1 < /dev/null > /dev/null 2>&1 &
done
wait
echo "drift compile $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
drift() {
  while read -r line; do
    [ $(( $(date +%s) - T0 )) -lt $2 ] || break
    timeout 60 $(cmd "$line") --systems mok,gemm-only --out $R/drift_$1.jsonl < /dev/null >> $R/drift.log 2>&1
  done < benchmarks/device/s23_drift.txt
  echo "drift $1 $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
}
drift a 330
D="timeout 100 python3 benchmarks/narrow_diag.py"
$D --workloads minimax-m2:16:4096 --comm-sms 32,64 --minibatch 4096 --list-lag 2 > $R/diag_minimax.log 2>&1
$D --workloads qwen3-235b-a22b:8:2048 --comm-sms 32,64 --minibatch 4096 --list-lag 4 > $R/diag_qwen235.log 2>&1
$D --workloads glm-4.5:32:6144 --comm-sms 32,64 --minibatch 8192 --list-lag 4 > $R/diag_glm45.log 2>&1
echo "diag $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
drift b 540  # a second run of as many lines as time allows
