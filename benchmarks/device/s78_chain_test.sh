#!/bin/bash
# Usage: bash benchmarks/device/s78_chain_test.sh TAG   (an H100 or H200, <= 330 s)
# Session 78: the test of branch s78-item-chain's floor (the last of several minibatches ends no
# sooner than one row tile's item chain after its rows are in), its predictions registered
# before the run (mok_kernels/logs_s78/chain_test_{main,branch}_HW.txt, by
# mok_kernels/logs_s78/chain_test_predict.py): syn5's H 5,376 / I 384 shape at EP 4 x 2,304
# uniform (main picks minibatch 1,024 or 512 at 64 comm SMs and lag 2-3, the branch one
# minibatch of 3,072 at 64, lag 1; the lag sweep measured 0.182 ms at best, 32 comm SMs only),
# minibatch {512, 1,024, 3,072} x comm SMs {32, 64} x lag {1, 2, 3, 4}; and syn28's H 2,560 /
# I 448 shape at EP 8 x 4,608 zipf:1.2 seed 28, minibatch {512, 1,024, 4,096} x comm SMs {8, 16,
# 32}, lag 1 (six pipelined). Pull dispatch, push combine, capacity 0.5 and 1.0 as the earlier
# runs. Records in $OUT/TAG/chain_test.jsonl, everything in $OUT/TAG.tgz.
export PYTHONPATH=.
TAG=${1:?tag}
T0=$(date +%s); FINAL=$OUT; export OUT=/tmp/$TAG; R=$OUT/$TAG; mkdir -p $R
trap 'tar -czf $FINAL/$TAG.tgz -C $OUT .' EXIT
{ nvidia-smi --query-gpu=name --format=csv,noheader; date -u; git log -1 --format=%H; } > $R/gpu.txt
D=calibration/drawn_shapes
timeout 170 python3 -m mok_kernels.bench --model $D/seed5/syn5-h5376-i384-e16-k1.toml --ep 4 \
  --tokens 2304 --routing uniform --seed 0 --dispatch pull --combine push --minibatch 512,1024,3072 \
  --comm-sms 32,64 --list-lag 1,2,3,4 --capacity 0.5 --macrobatch 131072 --systems mok,gemm-only \
  --out $R/chain_test.jsonl > $R/syn5.log 2>&1
echo "syn5 rc $? $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
timeout 130 python3 -m mok_kernels.bench --model $D/seed28/syn28-h2560-i448-e16-k2.toml --ep 8 \
  --tokens 4608 --routing zipf:1.2 --seed 28 --dispatch pull --combine push --minibatch 512,1024,4096 \
  --comm-sms 8,16,32 --capacity 1.0 --macrobatch 131072 --systems mok,gemm-only \
  --out $R/chain_test.jsonl > $R/syn28.log 2>&1
echo "syn28 rc $? $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
cat $R/gpu.txt; tail -n 30 $R/syn5.log $R/syn28.log | cut -c1-200
