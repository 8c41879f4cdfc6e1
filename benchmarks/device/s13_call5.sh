#!/bin/bash
# Session 13, device call 5 (nvidia-h200, <= 480 s): group_m chosen per shape (tiles.py; 8 for
# mixtral-8x7b and llama4-maverick, 1 elsewhere). Untimed in parallel: GPU tests on the new
# default, compile warm-ups. Then timed, alone: the space sweep's mixtral-8x7b and llama4-maverick
# workloads again (their earlier records ran group_m 1) and their GEMM phases alone.
export PYTHONPATH=.
T0=$(date +%s); R=/tmp/s13/r5; mkdir -p $R /tmp/junk5
{ nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader; date -u; } > $R/gpu.txt 2>&1
T="timeout 230 python3 -m pytest -q -rA"
$T tests/test_kernels_gpu.py -k "grouped or every_model_preset or not_multiple or gemm_phases or bits_identical" > $R/t_kernels.log 2>&1 &
$T tests/test_fp8_gpu.py -k "grouped or not v3_to_v5" > $R/t_fp8.log 2>&1 &
for m in mixtral-8x7b llama4-maverick; do
  timeout 230 python3 -m mok_kernels.space_sweep --compile-only --models $m --deadline-s 200 > /tmp/junk5/s$m.log 2>&1 &
  timeout 230 python3 -m mok_kernels.space_sweep --compile-only --gemm-phases --models $m --deadline-s 200 > /tmp/junk5/g$m.log 2>&1 &
done
wait
echo "warm-up $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
tail -n 2 /tmp/junk5/*.log > $R/warmup_tails.log 2>&1
timeout 60 python3 -m mok_kernels.space_sweep --gemm-phases --models mixtral-8x7b,llama4-maverick \
  --out $R/gemm_phases_gm.jsonl --deadline-s 50 > $R/gemm_gm.log 2>&1
echo "gemm phases $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
REM=$(( 470 - ($(date +%s) - T0) ))
timeout $REM python3 -m mok_kernels.space_sweep --models mixtral-8x7b,llama4-maverick \
  --out $R/space_gm.jsonl --deadline-s $(( REM - 15 )) > $R/space_gm.log 2>&1
echo "end $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
tar czf $OUT/call5.tgz -C /tmp/s13 r5
