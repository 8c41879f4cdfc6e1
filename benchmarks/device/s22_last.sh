#!/bin/bash
# Session 22 (2026-12-02), nvidia-h200, <= 300 s: (1) the GPU tests of the knobs chosen at launch
# with this session's refitted model (tests/test_knobs_gpu.py); (2) llama4-maverick at decode
# sizes across comm-SM counts 4-64 (minibatch 2048, lag 1; EP 32 128 tokens, where the pick of 4
# comm SMs lost 11%, and EP 16 256 tokens, where 4 and 64 tied), timed twice: not a registered
# test, a look at what the model misses (it predicts every count within 0.3%).
export PYTHONPATH=.
T0=$(date +%s); R=$OUT/s22l; J=/tmp/junk22l; mkdir -p $R $J
B="python3 -m mok_kernels.bench --rank 0 --routing uniform --model llama4-maverick --capacity 1.0 --dispatch pull --combine push --minibatch 2048 --comm-sms 4,8,12,16,24,32,48,64"
timeout 200 python3 -m pytest -v -p no:cacheprovider tests/test_knobs_gpu.py > $R/t_knobs.log 2>&1 &
timeout 150 $B --ep 32 --tokens 128 --systems mok --iters 1 --warmup 0 --out $J/w.jsonl > /dev/null 2>&1 &
timeout 150 $B --ep 16 --tokens 256 --systems mok --iters 1 --warmup 0 --out $J/w.jsonl > /dev/null 2>&1 &
wait
echo "tests and warm-up $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
for rep in a b; do
  timeout 40 $B --ep 32 --tokens 128 --systems mok,gemm-only --out $R/llama4_comm.jsonl >> $R/llama4_comm.log 2>&1
  timeout 40 $B --ep 16 --tokens 256 --systems mok,gemm-only --out $R/llama4_comm.jsonl >> $R/llama4_comm.log 2>&1
done
echo "end $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
