#!/bin/bash
# Prepared in session 56 (one H100 or H200, <= 240 s, < 40 GiB of GPU memory a case): the new GPU
# cases of tests/test_accept_gpu.py, each against the float32 reference, nothing else.
# - Routed rows past 2^31 elements (rank 7 of EP 8 serving 2^21 rows of H 2048, ~25-35 GiB):
#   BF16 pull/push and push/pull, Triton FP8, the Gluon FP8 pass (sm_90); and two virtual ranks
#   whose rings pass 2^31 elements each under push dispatch (the int64 ring stride of commit
#   da30bd0; before it the senders wrote rank 1's rows at a wrapped offset).
# - Edges of the acceptance rules at small shapes: top_k = E, one token, a rank with no rows,
#   minibatch 1 with a 129-row ring, a ring one row above minibatch + block_m, comm_sms 1 and
#   programs - 1, EP 64 / 128 emulated, H 64, I 1, I 12288, H 16384, tiles 16 / 32, capacity 0.5,
#   FP8 at H 128 / I 1 / one token / v1 with 128-wide tiles, Gluon with one token and I 1.
# Written before the run: every case passes (the audit found no other overflow at these shapes);
# a failure names the case and its errors. The big cases run first (their own timeout), so the
# edges still run if one of them stalls. Logs go to $OUT/s57/.
R=$OUT/s57; mkdir -p $R; export PYTHONPATH=.
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q "H200\|H100" || { echo "not an H100 or H200"; exit 0; }
{ nvidia-smi --query-gpu=name,memory.total --format=csv,noheader; date -u; git log -1 --format=%H; } > $R/gpu.txt
timeout 110 python3 -m pytest -q -p no:cacheprovider tests/test_accept_gpu.py -k "2_31" -rA \
  --durations=0 > $R/big.log 2>&1
echo "big: exit $? at $(date -u)" >> $R/gpu.txt
timeout 85 python3 -m pytest -q -p no:cacheprovider tests/test_accept_gpu.py -k "not 2_31" -rA \
  --durations=0 > $R/edges.log 2>&1
echo "edges: exit $? at $(date -u)" >> $R/gpu.txt
timeout 40 python3 -m pytest -q -p no:cacheprovider tests/test_kernels_gpu.py -k "ids_naming_no_expert" \
  -rA > $R/bad_ids.log 2>&1     # ids outside [0, E) flagged by the schedule's hist kernel
echo "bad ids: exit $? at $(date -u)" >> $R/gpu.txt
cat $R/gpu.txt; grep -E "PASSED|FAILED|ERROR|passed|failed" $R/big.log $R/edges.log $R/bad_ids.log | cut -c1-200 | tail -n 60
