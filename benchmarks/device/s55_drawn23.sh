#!/bin/bash
# Prepared in session 54 (an H100 or H200, <= 320 s): seed 23's six drawn shapes (H 2,048-7,168,
# I 320-6,848, 8-256 experts, top-1 to top-9), 30 workloads x 4 knob settings at 128-6,144 tokens.
# Registered before any run, for either card (shipped parameters, analytic and simulator):
# calibration/predictions/h100_drawn23_2026-12-05.jsonl and h200_drawn23_2026-12-05.jsonl (plan
# drawn23_plan_2026-12-05.jsonl). By the card in gpu.txt, the records go to
# calibration/runs/h100/drawn23.jsonl or calibration/runs/h200_drawn/drawn23.jsonl. Report with
#   python -m calibration.registered calibration/predictions/CARD_drawn23_2026-12-05.jsonl RUNS --by model,tokens
# before any refit (a registration meets only runs of its own card; runs of the other are counted
# in a warning).
TOTAL=310 bash benchmarks/device/drawn_seed.sh 23 s55d23
