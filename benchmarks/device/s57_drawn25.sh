#!/bin/bash
# Prepared in session 57 (an H100 or H200, <= 320 s): seed 25's six drawn shapes (H 1,280-7,936,
# I 384-6,208, 64-256 experts, top-1 to top-6, three with a shared expert), 30 workloads x 4 knob
# settings at 128-6,144 tokens. Registered before any run, for either card (shipped parameters,
# analytic and simulator): calibration/predictions/h100_drawn25_2026-12-05.jsonl and
# h200_drawn25_2026-12-05.jsonl (plan drawn25_plan_2026-12-05.jsonl); for an H100 also with the
# GEMM lookup's weight stream and tensor efficiency fitted to the H100's phases (shipped):
# h100_drawn25_h100gemm_2026-12-05.jsonl, and all four constants: h100_drawn25_h100gemm4_2026-12-05.jsonl. Report with
#   python -m calibration.registered calibration/predictions/CARD_drawn25_2026-12-05.jsonl RUNS --by model,tokens
# before any refit.
TOTAL=310 bash benchmarks/device/drawn_seed.sh 25 s57d25
