#!/bin/bash
# Session 56 (the 2-core CPU box, no GPU lent): the fabric transfer registered beside the shipped
# h200-hgx8 fit for every real-GPU grid prepared and not yet run. The transfer
# (`python -m calibration.transfer --write-fabric`) is h200-1's fit and GEMM table (today's kernel,
# its peers emulated) with the fabric the NVLink microbenchmarks measured and the in-kernel copy
# rate moved by h200-1's own in-kernel / stand-alone ratio: no fit to 2-GPU layer runs. Its
# parameters are frozen beside the registrations (calibration/predictions/params/). Grids: grid F
# (benchmarks/device/s26_x2.sh) and issue 15's parts a-d (benchmarks/device/x4x8_{a,b,c,d}.sh).
# Report each registration against its runs beside the shipped one's, before any refit.
set -e
export PYTHONPATH=.
PY=${PY:-.venv/bin/python}
D=calibration/predictions; P=$D/params/h200-hgx8_fabric_2026-12-05.json
mkdir -p $D/params
$PY -m calibration.transfer --write-fabric $P
$PY -m calibration.register --gpus 2 --params $P \
  --model qwen3-30b-a3b,qwen3-next-80b-a3b,llama4-maverick --tokens 256,2048,8192 \
  --routing uniform,zipf:1.2 --dispatch pull,push --combine push,pull --minibatch 2048 \
  --comm-sms 16,32 --out $D/h200x2_grid_f_fabric_2026-12-05.jsonl
for N in 4 8; do
  $PY -m calibration.register --gpus $N --params $P --model kimi-k2,glm-5 --tokens 256,1024,4096,8192 \
    --routing uniform,zipf:1.2,hot:0.1 --dispatch pull,push --combine push,pull --minibatch 2048 \
    --comm-sms 32 --out $D/h200x${N}_a_fabric_2026-12-05.jsonl
  $PY -m calibration.register --gpus $N --params $P --model qwen3-235b-a22b,minimax-m2 \
    --tokens 256,1024,4096,8192 --routing uniform,zipf:1.2,hot:0.1 --dispatch pull,push \
    --combine push,pull --minibatch 2048 --comm-sms 32 --out $D/h200x${N}_b_fabric_2026-12-05.jsonl
  $PY -m calibration.register --gpus $N --params $P --model qwen3-30b-a3b,qwen3-next-80b-a3b \
    --tokens 1024,4096,8192 --routing uniform --dispatch pull,push --combine push --minibatch 2048 \
    --comm-sms 16,32 --out $D/h200x${N}_c_fabric_2026-12-05.jsonl
  $PY -m calibration.register --gpus $N --params $P --model mixtral-8x7b,qwen3-30b-a3b --tokens 1024,4096 \
    --dispatch pull,push --combine push --minibatch 2048 --comm-sms 32 --source-order rank,rotated \
    --out $D/h200x${N}_d_fabric_2026-12-05.jsonl
done
