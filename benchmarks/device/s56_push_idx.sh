#!/bin/bash
# Prepared in session 55 (an H100 or H200, <= 240 s): the push lanes' per-chunk index wait, timed
# directly (mok_kernels/logs_s55/push_dispatch_analysis.md "For the device run"). The megakernel's
# copies alone (benchmarks/copy_beside_gemm.py, form "copies": GEMM items skipped) at EP 32 x 4,096
# tokens, hot 0.1, 8 comm SMs, push against pull dispatch (push combine), on three shapes that
# differ only in H (2,048 / 4,096 / 7,936: benchmarks/device/shapes_s56/, syn22-h7936-i384-e128-k10's
# experts), so the rows and chunks are the same and only the bytes a row differ.
# Written before the run: (push - pull - the lanes' row-tile visits) / the chunks a comm program
# copies is the push loop's extra cost a chunk. The shipped model (a flat 1/serial_copy_scale
# against pull's 1/pipe_copy_scale) says it grows with H: about 1.0 / 2.0 / 3.8 us a chunk at
# H 2,048 / 4,096 / 7,936. The reading of the kernel's runs loop (two dependent cached index loads
# a chunk, then the pipelined copy_rows of the pull path) says it stays within a factor 1.5 across
# the three, below 1.5 us. Logs and lines go to $OUT/s56pi/.
R=$OUT/s56pi; mkdir -p $R; export PYTHONPATH=.
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q "H200\|H100" || { echo "not an H100 or H200"; exit 0; }
{ nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader; date -u; git log -1 --format=%H; } > $R/gpu.txt
S=benchmarks/device/shapes_s56
timeout 220 python3 benchmarks/copy_beside_gemm.py --out $R/push_idx.jsonl \
  --workloads $S/push-idx-h2048.toml:32:4096,$S/push-idx-h4096.toml:32:4096,$S/push-idx-h7936.toml:32:4096 \
  --dispatch push,pull --combine push --comm-sms 8 --routing hot:0.1 --iters 20 > $R/push_idx.log 2>&1
echo "exit $? at $(date -u)" >> $R/gpu.txt
cat $R/gpu.txt; cut -c1-200 $R/push_idx.log | tail -n 20
