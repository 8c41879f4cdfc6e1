#!/bin/bash
# Session 16, device call 2 (nvidia-h200, <= 570 s): call 1's measurements again (its sweeps
# stopped at import: mok_model.cli needed SimPy, fixed), with the three GPU tests that failed the
# same way and the FP8 forward's GPU tests (three shards) untimed in parallel with the compile
# warm-ups. Timed, alone: the space workloads of the five presets without a shared expert (MoK at
# four knob settings + the same rank's GEMMs alone; predictions registered in
# calibration/predictions/h200_noshared_2026-12-01.jsonl before the run), then the kernel's GEMM
# phases alone on the same workloads.
export PYTHONPATH=.
T0=$(date +%s); R=/tmp/s16/r2; J=/tmp/junk2; mkdir -p $R $J
{ nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader; date -u; } > $R/gpu.txt 2>&1
M=mixtral-8x7b,qwen3-30b-a3b,qwen3-235b-a22b,minimax-m2,gpt-oss-120b
timeout 300 python3 -m pytest -q -rA tests/test_kernels_gpu.py -k "bench_on_real_gpus or bench_gemm_phases_record or group_on_real_gpus or no_shared" > $R/t_kernels_retry.log 2>&1 &
python3 -m pytest --co -q tests/test_fp8_gpu.py 2>/dev/null | grep '::' > $J/ids.txt
split -n r/3 $J/ids.txt $J/shard_
for f in $J/shard_*; do
  xargs -a $f -d '\n' timeout 300 python3 -m pytest -q -rA > $R/t_fp8_${f##*_}.log 2>&1 &
done
P="timeout 240 python3 -m mok_kernels.space_sweep --compile-only"
$P --models mixtral-8x7b,gpt-oss-120b > $J/c1.log 2>&1 &
$P --models qwen3-30b-a3b,minimax-m2 > $J/c2.log 2>&1 &
$P --models qwen3-235b-a22b > $J/c3.log 2>&1 &
timeout 240 python3 -m mok_kernels.space_sweep --compile-only --gemm-phases --models $M > $J/c4.log 2>&1 &
wait
echo "tests and warm-up $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
tail -n 2 $J/c*.log > $R/warmup_tails.log 2>&1
REM=$(( 560 - ($(date +%s) - T0) ))
timeout $REM python3 -m mok_kernels.space_sweep --models $M --out $R/space_noshared.jsonl \
  --deadline-s $(( REM - 80 )) > $R/space_noshared.log 2>&1
REM=$(( 560 - ($(date +%s) - T0) ))
timeout $REM python3 -m mok_kernels.space_sweep --models $M --gemm-phases \
  --out $R/gemm_phases_noshared.jsonl --deadline-s $(( REM - 15 )) > $R/gemm_phases_noshared.log 2>&1
echo "end $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
tar czf $OUT/call2.tgz -C /tmp/s16 r2
