#!/usr/bin/env bash
# Device check of `mok bench` through the CLI (kept for the record: mok_kernels/NOTES.md, run 8).
set -u
mok() { python3 -c 'import sys; from mok_model.cli import main; sys.exit(main(sys.argv[1:]))' "$@"; }
mok bench --routing hot:0.5 --out "$OUT/x.jsonl"; echo "exit status for hot:0.5: $?"
mok bench --model kimi-k2,glm-5 --ep 16 --tokens 2048 --routing hot:0.05,zipf:1.2 \
  --dispatch pull,push --combine push --minibatch 2048,4096 --comm-sms 16,32 \
  --systems mok,torch-grouped,gemm-only --iters 20 --warmup 3 --out "$OUT/bench_cli_v4.jsonl" \
  --note "mok bench via the CLI, routing as mok_model reads it (hot:X = expert 0's share of routes)"
echo "exit status: $?"
