#!/bin/bash
# Session 48 (nvidia-h200, <= 200 s): `mok bench --source-order rank,rotated` on one GPU emulating
# its peers: every setting in both orders, the same inputs (one process; rank order first). One
# GPU cannot show the cross-GPU source slices rotation removes (docs/sim-study.md "N"); this
# checks the option end to end (records name tiles.source_order) and that rotation costs nothing
# on the emulated path. Records: $OUT/s48rot/source_order.jsonl. Registered before the run:
# calibration/predictions/h200_source_order_2026-12-05.jsonl (analytic: no difference; simulator
# within 0.3 %); report with `python -m calibration.registered PRED RUNS --by model,tokens`.
export PYTHONPATH=.
R=$OUT/s48rot; mkdir -p $R
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo "not an H200"; exit 0; }
timeout ${LIMIT:-190} python3 -m mok_kernels.bench --model mixtral-8x7b,qwen3-30b-a3b --ep 8 \
  --tokens 4096 --dispatch pull,push --combine push --minibatch 2048 --comm-sms 32 \
  --source-order rank,rotated --systems mok --iters 20 --out $R/source_order.jsonl \
  > $R/source_order.log 2>&1
echo "exit $?"; grep -c '"source_order"' $R/source_order.jsonl; tail -n 20 $R/source_order.log | cut -c1-160
