#!/bin/bash
# Session 20 (2026-12-02), nvidia-h200, <= 560 s. Two measurements, predictions registered first.
# 1. The automatic pick with the work-list lag (mok bench --auto: MoKLayer's knobs and lag from
#    the tuner) beside a sweep of push combine x minibatch 512-8192 x 32 / 64 comm SMs x lag
#    1 / 2 / 4 on six workloads outside the lag sweep (plan: benchmarks/auto_plan.py, whose
#    docstring names this run's arguments;
#    registered: calibration/predictions/h200_auto_lag_2026-12-02.jsonl).
# 2. The backward megakernel's claim policy, A/B in one run: this tree (the next item claimed
#    once the current one is done, "late") and a copy with s20_bwd_claim_late.patch reversed
#    (claimed ahead at the loop top, "ahead"), training tiles, kimi-k2 / glm-5 EP 8, 1024 / 4096
#    tokens, interleaved ahead, late, ahead, late. The backward GPU tests run on the late tree
#    first (untimed, beside the compile warm-up).
#    (Run once on 2026-12-02; the late variant gained nothing and was reverted, so the patch no
#    longer reverses on this tree: the script is the record of what ran.)
export PYTHONPATH=.
T0=$(date +%s); R=$OUT/s20; J=/tmp/junk20; mkdir -p $R $J   # results straight under $OUT
{ nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader; date -u; } > $R/gpu.txt 2>&1
rm -rf /tmp/ahead && cp -r . /tmp/ahead && (cd /tmp/ahead && patch -R -p1 < benchmarks/device/s20_bwd_claim_late.patch > $R/patch.log 2>&1)
B="python3 -m mok_kernels.bench --rank 0 --routing uniform"
G="--capacity 1.0 --dispatch pull --combine push --minibatch 512,1024,2048,4096,8192 --comm-sms 32,64 --list-lag 1,2,4 --auto"
D=calibration/drawn_shapes
W=("$D/seed2/syn2-h7936-i256-e64-k6-s1.toml 8 1024" "$D/seed5/syn5-h5888-i640-e32-k1-s1.toml 4 3072"
   "$D/seed4/syn4-h2048-i320-e8-k2-s1.toml 8 2048" "$D/seed3/syn3-h1792-i320-e64-k4-s1.toml 16 4096"
   "qwen3-30b-a3b 8 4096" "kimi-k2 16 1024")
BW="--pass bwd --model kimi-k2,glm-5 --ep 8 --tokens 1024,4096 --minibatch 4096 --comm-sms 32 --capacity 1.0 --systems mok --bwd-tiles saved_gu=1,bn_a=128,bn_x=256"
timeout 200 python3 -m pytest -q -rA tests/test_backward_gpu.py tests/test_autograd_gpu.py > $R/t_bwd.log 2>&1 &
for w in "${W[@]}"; do
  set -- $w
  timeout 200 $B --model $1 --ep $2 --tokens $3 $G --systems mok --iters 1 --warmup 0 --out $J/w.jsonl > /dev/null 2>&1 &
done
for tree in . /tmp/ahead; do
  (cd $tree && timeout 200 $B $BW --iters 1 --warmup 0 --out $J/b.jsonl > /dev/null 2>&1) &
done
wait
echo "warm-up $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
for w in "${W[@]}"; do
  set -- $w
  timeout 60 $B --model $1 --ep $2 --tokens $3 $G --systems mok,gemm-only --out $R/auto.jsonl >> $R/auto.log 2>&1
  echo "$1 $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
done
for rep in 1 2; do
  for tree in /tmp/ahead .; do
    tag=$([ $tree = . ] && echo late || echo ahead)
    (cd $tree && timeout 60 $B $BW --out $R/bwd_${tag}.jsonl >> $R/bwd_${tag}.log 2>&1)
    echo "bwd $tag $rep $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
  done
done
