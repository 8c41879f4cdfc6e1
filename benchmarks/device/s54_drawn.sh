#!/bin/bash
# Prepared in session 53 (an H100 or H200, <= 570 s): seed 22's six drawn shapes (mostly narrow
# experts, I 384-2,752), then seed 21's again under the group_m rule of session 53 (its two 98 MiB
# shapes now grouped). Registered before any run, for either card (shipped parameters, analytic
# and simulator): calibration/predictions/h100_drawn22_2026-12-05.jsonl / h200_drawn22_..., and
# h100_drawn21g_2026-12-05.jsonl / h200_drawn21_2026-12-05.jsonl. By the card in gpu.txt, the
# records go to calibration/runs/h100/drawn22.jsonl and drawn21g.jsonl (never over session 53's
# drawn21.jsonl, group_m 1), or calibration/runs/h200_drawn/drawn22.jsonl and drawn21.jsonl.
# Report each with
#   python -m calibration.registered calibration/predictions/CARD_drawn22_2026-12-05.jsonl RUNS --by model,tokens
# before any refit.
TOTAL=300 bash benchmarks/device/drawn_seed.sh 22 s54d22
TOTAL=250 bash benchmarks/device/drawn_seed.sh 21 s54d21
