#!/bin/bash
# Prepared in session 55 (an H100 or H200, <= 320 s): seed 24's six drawn shapes (H 2,304-7,424,
# I 448-6,976, 8-160 experts, top-1 to top-8), 30 workloads x 4 knob settings at 128-6,144 tokens.
# Registered before any run, for either card (shipped parameters, analytic and simulator):
# calibration/predictions/h100_drawn24_2026-12-05.jsonl and h200_drawn24_2026-12-05.jsonl (plan
# drawn24_plan_2026-12-05.jsonl). By the card in gpu.txt, the records go to
# calibration/runs/h100/drawn24.jsonl or calibration/runs/h200_drawn/drawn24.jsonl. Report with
#   python -m calibration.registered calibration/predictions/CARD_drawn24_2026-12-05.jsonl RUNS --by model,tokens
# before any refit (a registration meets only runs of its own card; runs of the other are counted
# in a warning).
TOTAL=310 bash benchmarks/device/drawn_seed.sh 24 s56d24
