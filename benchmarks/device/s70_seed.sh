#!/bin/bash
# Usage: [TOTAL=330] bash benchmarks/device/s70_seed.sh TAG   (an H100 or H200, <= TOTAL + 10 s)
# Session 70: one registered drawn-seed sweep, chosen by the card, since the nvidia-h200 kind may
# give an H100 (session 70's seed 37 ran on one it was not registered for).
#   H200: seed 37 (h200_drawn37_before_s69_2026-12-07.jsonl with the parameters shipped before
#         session 70, h200_drawn37_sustain2_candidate_2026-12-07.jsonl with those shipped since,
#         h200_drawn37_plus2127_candidate_2026-12-07.jsonl with session 70's unshipped candidate,
#         h200_drawn37_monotone_2026-12-07.jsonl with those shipped in session 72).
#   H100: seed 38 (h100_drawn38_2026-12-07.jsonl, the parameters shipped in session 70;
#         h100_drawn38_plus2127_candidate_2026-12-07.jsonl, the candidate).
#   S200=N / S100=N pick another registered seed for that card (session 72 registered S100=39:
#   h100_drawn39_2026-12-07.jsonl, the parameters shipped at ea0eb1e).
# Everything is tarred into $OUT/TAG.tgz.
TAG=${1:?tag}; R=$OUT/$TAG; mkdir -p $R
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
if echo "$GPU" | grep -q H200; then S=${S200:-37}; elif echo "$GPU" | grep -q H100; then S=${S100:-38}; else
  echo "not an H100 or H200: $GPU"; exit 0; fi
TOTAL=${TOTAL:-330} bash benchmarks/device/drawn_seed.sh $S $TAG/d$S > $R/d${S}_run.log 2>&1
echo "$GPU: seed $S" > $R/summary.txt; tail -n 3 $R/*.log >> $R/summary.txt
cd $OUT && tar czf $TAG.tgz $TAG && rm -rf $TAG
tar xzOf $TAG.tgz $TAG/summary.txt
