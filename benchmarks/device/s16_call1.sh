#!/bin/bash
# Session 16, device call 1 (nvidia-h200, <= 570 s): the forward without the zero shared expert.
# Untimed, in parallel: every GPU test of the forward kernel (four shards, the new
# test_no_shared_expert_runs_no_shared_tiles among them), the autograd / Hugging Face tests
# (Mixtral and Qwen3-MoE blocks have no shared expert), the randomized forward shapes, and
# compile warm-ups of the space workloads of the five presets without a shared expert. Then timed,
# alone: those workloads (MoK at four knob settings + the same rank's GEMMs alone) in the space
# plan's order (predictions registered in calibration/predictions/h200_noshared_2026-12-01.jsonl
# before this run), then the kernel's GEMM phases alone on the same workloads.
export PYTHONPATH=.
T0=$(date +%s); R=/tmp/s16/r1; J=/tmp/junk1; mkdir -p $R $J
{ nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader; date -u; git log -1 --oneline; } > $R/gpu.txt 2>&1
M=mixtral-8x7b,qwen3-30b-a3b,qwen3-235b-a22b,minimax-m2,gpt-oss-120b
python3 -m pytest --co -q tests/test_kernels_gpu.py 2>/dev/null | grep '::' > $J/ids.txt
split -n r/4 $J/ids.txt $J/shard_
for f in $J/shard_*; do
  xargs -a $f -d '\n' timeout 300 python3 -m pytest -q -rA > $R/t_kernels_${f##*_}.log 2>&1 &
done
timeout 300 python3 -m pytest -q -rA tests/test_autograd_gpu.py > $R/t_autograd.log 2>&1 &
timeout 300 python3 -m pytest -q -rA tests/test_random_shapes_gpu.py -k forward > $R/t_random_fwd.log 2>&1 &
P="timeout 300 python3 -m mok_kernels.space_sweep --compile-only"
$P --models mixtral-8x7b,gpt-oss-120b > $J/c1.log 2>&1 &
$P --models qwen3-30b-a3b,minimax-m2 > $J/c2.log 2>&1 &
$P --models qwen3-235b-a22b > $J/c3.log 2>&1 &
wait
echo "tests and warm-up $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
tail -n 2 $J/c*.log > $R/warmup_tails.log 2>&1
REM=$(( 560 - ($(date +%s) - T0) ))
timeout $REM python3 -m mok_kernels.space_sweep --models $M --out $R/space_noshared.jsonl \
  --deadline-s $(( REM - 90 )) > $R/space_noshared.log 2>&1
REM=$(( 560 - ($(date +%s) - T0) ))
timeout $REM python3 -m mok_kernels.space_sweep --models $M --gemm-phases \
  --out $R/gemm_phases_noshared.jsonl --deadline-s $(( REM - 15 )) > $R/gemm_phases_noshared.log 2>&1
echo "end $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
tar czf $OUT/call1.tgz -C /tmp/s16 r1
