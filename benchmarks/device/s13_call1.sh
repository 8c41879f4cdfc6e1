#!/bin/bash
# Session 13, device call 1 (nvidia-h200, <= 570 s; run with timeout_s 600).
# Untimed, every process in parallel: the expert orders of the legacy zipf records, GPU tests of
# the new and opt-in paths, compile warm-ups of calls 1-2. Then timed, alone on the GPU: the
# megakernel's GEMM phases across the space (space_sweep --gemm-phases).
# Records also go to /tmp/s13 on the device so call 2 (same warm machine) resumes from them.
export PYTHONPATH=.
T0=$(date +%s); S=/tmp/s13; mkdir -p $S /tmp/junk
{ nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader; date -u; git log -1 --format=%H; } > $OUT/gpu.txt 2>&1
timeout 60 python3 benchmarks/device/legacy_zipf_orders.py $OUT/legacy_zipf_orders.json > $OUT/legacy.log 2>&1
T="timeout 330 python3 -m pytest -q -rA"
$T tests/test_backward_gpu.py -k saved > $OUT/t_bwd_saved.log 2>&1 &
$T tests/test_autograd_gpu.py > $OUT/t_autograd.log 2>&1 &
$T tests/test_fp8_gpu.py -k "kernv3 or kernv4 or kernv5" > $OUT/t_fp8_v345.log 2>&1 &
$T tests/test_kernels_gpu.py -k "gemm_phases or every_model_preset or not_multiple" > $OUT/t_kernels.log 2>&1 &
for m in deepseek-v3,kimi-k2 glm-4.5,glm-5 qwen3-235b-a22b,qwen3-30b-a3b qwen3-next-80b-a3b,gpt-oss-120b \
         mixtral-8x7b,llama4-maverick,minimax-m2; do
  timeout 300 python3 -m mok_kernels.space_sweep --compile-only --gemm-phases --models $m --deadline-s 270 > /tmp/junk/g$m.log 2>&1 &
done
timeout 300 python3 -m mok_kernels.space_sweep --compile-only --skip-done calibration/runs/h200_space/space.jsonl --deadline-s 270 > /tmp/junk/rest.log 2>&1 &
BW="--pass bwd --ep 8 --rank 0 --tokens 1024 --routing uniform --minibatch 4096 --comm-sms 32 --capacity 1.0 --systems mok --iters 1 --warmup 0"
for m in kimi-k2 glm-5; do
  timeout 300 python3 -m mok_kernels.bench $BW --model $m --bwd-tiles "default;saved_gu=1;bn_x=256" --out /tmp/junk/b1$m.jsonl > /tmp/junk/b1$m.log 2>&1 &
  timeout 300 python3 -m mok_kernels.bench $BW --model $m --bwd-tiles "saved_gu=1,bn_a=128;saved_gu=1,bn_a=128,bn_x=256" --out /tmp/junk/b2$m.jsonl > /tmp/junk/b2$m.log 2>&1 &
done
timeout 300 python3 -m mok_kernels.bench --model kimi-k2,glm-5 --ep 8 --rank 0 --tokens 1024 --routing uniform \
  --precision fp8 --fp8-kernel v2-bm64,v3-bm64,v4-bm64,v5-bm64 --systems mok --minibatch 4096 --comm-sms 32 \
  --capacity 1.0 --iters 1 --warmup 0 --out /tmp/junk/f8.jsonl > /tmp/junk/f8.log 2>&1 &
wait
echo "warm-up $(( $(date +%s) - T0 )) s" >> $OUT/gpu.txt
tail -n 3 /tmp/junk/*.log > $OUT/warmup_tails.log 2>&1
REM=$(( 565 - ($(date +%s) - T0) ))
timeout $REM python3 -m mok_kernels.space_sweep --gemm-phases --out $S/gemm.jsonl --deadline-s $(( REM - 20 )) > $OUT/gemm.log 2>&1
cp $S/gemm.jsonl $OUT/gemm.jsonl
echo "end $(( $(date +%s) - T0 )) s" >> $OUT/gpu.txt
