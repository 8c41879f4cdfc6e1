#!/bin/bash
# Session 51: issue 15's four 4- and 8-GPU grids (benchmarks/device/x4x8_{a,b,c,d}.sh) registered
# again after NCCL's channels per peer entered the model (baselines.nccl_peers_cap: h200-hgx8's
# 2-GPU nccl_eff re-expressed as one peer's 66 GB/s, the link share at its 0.82 prior): the
# nccl-torch rows at EP 4 / 8 move (exchanges 3.0x / 4.2x faster: 3 peers' channels, then the
# link), the MoK rows are today's model. Files calibration/predictions/h200xN_P_2026-12-05b.jsonl, written once; report every
# registration of a part against its runs, before any refit.
set -e
export PYTHONPATH=.
PY=${PY:-.venv/bin/python}
for N in 4 8; do
  $PY -m calibration.register --gpus $N --model kimi-k2,glm-5 --tokens 256,1024,4096,8192 \
    --routing uniform,zipf:1.2,hot:0.1 --dispatch pull,push --combine push,pull --minibatch 2048 \
    --comm-sms 32 --out calibration/predictions/h200x${N}_a_2026-12-05b.jsonl
  $PY -m calibration.register --gpus $N --model qwen3-235b-a22b,minimax-m2 --tokens 256,1024,4096,8192 \
    --routing uniform,zipf:1.2,hot:0.1 --dispatch pull,push --combine push,pull --minibatch 2048 \
    --comm-sms 32 --out calibration/predictions/h200x${N}_b_2026-12-05b.jsonl
  $PY -m calibration.register --gpus $N --model qwen3-30b-a3b,qwen3-next-80b-a3b \
    --tokens 1024,4096,8192 --routing uniform --dispatch pull,push --combine push --minibatch 2048 \
    --comm-sms 16,32 --out calibration/predictions/h200x${N}_c_2026-12-05b.jsonl
  $PY -m calibration.register --gpus $N --model mixtral-8x7b,qwen3-30b-a3b --tokens 1024,4096 \
    --dispatch pull,push --combine push --minibatch 2048 --comm-sms 32 --source-order rank,rotated \
    --out calibration/predictions/h200x${N}_d_2026-12-05b.jsonl
done
