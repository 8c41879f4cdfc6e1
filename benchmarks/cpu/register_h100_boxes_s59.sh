#!/bin/bash
# Session 59: the real-GPU grids prepared and not yet run, registered for HGX H100 boxes too
# (nvidia-h100-x2 / -x4 / -x8, which the device tool can lend): grid F (benchmarks/device/
# s26_x2.sh) and issue 15's four 4- and 8-GPU grids (x4x8_{a,b,c,d}.sh). The bench records
# an H100 box as h100-hgx8 (mok_kernels/knobs.py GPU_PRESETS), so the h200xN files cannot meet
# its runs. Same grids as register_x4x8_s51.sh, with h100-hgx8's shipped parameters (h100-1 with
# its H100 pass fit, the fabric measured on two H200s, the 2-H200 box's host terms; no multi-GPU
# H100 record behind them). Files calibration/predictions/h100x2_grid_f_2026-12-06.jsonl and
# h100xN_P_2026-12-06.jsonl, written once; report each against its runs before any refit.
set -e
export PYTHONPATH=.
PY=${PY:-.venv/bin/python}
R="--hardware h100-hgx8"
$PY -m calibration.register $R --gpus 2 --model qwen3-30b-a3b,qwen3-next-80b-a3b,llama4-maverick \
  --tokens 256,2048,8192 --routing uniform,zipf:1.2 --dispatch pull,push --combine push,pull \
  --minibatch 2048 --comm-sms 16,32 --out calibration/predictions/h100x2_grid_f_2026-12-06.jsonl
for N in 4 8; do
  $PY -m calibration.register $R --gpus $N --model kimi-k2,glm-5 --tokens 256,1024,4096,8192 \
    --routing uniform,zipf:1.2,hot:0.1 --dispatch pull,push --combine push,pull --minibatch 2048 \
    --comm-sms 32 --out calibration/predictions/h100x${N}_a_2026-12-06.jsonl
  $PY -m calibration.register $R --gpus $N --model qwen3-235b-a22b,minimax-m2 --tokens 256,1024,4096,8192 \
    --routing uniform,zipf:1.2,hot:0.1 --dispatch pull,push --combine push,pull --minibatch 2048 \
    --comm-sms 32 --out calibration/predictions/h100x${N}_b_2026-12-06.jsonl
  $PY -m calibration.register $R --gpus $N --model qwen3-30b-a3b,qwen3-next-80b-a3b \
    --tokens 1024,4096,8192 --routing uniform --dispatch pull,push --combine push --minibatch 2048 \
    --comm-sms 16,32 --out calibration/predictions/h100x${N}_c_2026-12-06.jsonl
  $PY -m calibration.register $R --gpus $N --model mixtral-8x7b,qwen3-30b-a3b --tokens 1024,4096 \
    --dispatch pull,push --combine push --minibatch 2048 --comm-sms 32 --source-order rank,rotated \
    --out calibration/predictions/h100x${N}_d_2026-12-06.jsonl
done
