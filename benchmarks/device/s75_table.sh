#!/bin/bash
# Usage: PART=a bash benchmarks/device/s75_table.sh TAG, then PART=b ... TAG2 on the same warm
# H200 right after (each <= 570 s; run with timeout_s 600).
# Session 74's drift test (docs/calibration.md "Session 74") found today's kernel's GEMM phases
# 0.7-2.5 % faster than the GEMM table's 2026-12-01/02 points under 2 ms and 1.4-2.3 % slower
# above. This times the table's workloads again with today's kernel, in two calls; the records
# stay in /tmp/s75 on the device between them, and --skip-done resumes where call a stopped.
#   a: compile warm-up (five processes: more ran an H200 out of memory in session 23), then the
#      space's GEMM phases (space_sweep --gemm-phases: eleven presets x EP 4-32 x 64-8,192
#      tokens x three routings, 756 workloads, about 0.44 s each) as far as the deadline goes;
#   b: the rest of those (compiled in a; on a fresh machine pass SPACE_DONE=<a's records>), then
#      128 / 512 tokens (252 workloads) and the six narrow table shapes of
#      calibration/table_shapes/ (36; session 22's plan).
# Each call tars /tmp/s75 (all records so far) and its logs into $OUT/TAG.tgz. Then, on the CPU:
# `python -m calibration.gemm_table <space.jsonl> <t128_512.jsonl> <narrow.jsonl> --system
# mok-gemm --sustain --out mok_model/params/gemm/h200-1.json`, refit (`python -m
# calibration.defaults`) and judge on the held-out drawn seeds (mok_kernels/NOTES.md "Next
# session (written in session 74)").
TAG=${1:?tag}; PART=${PART:?PART=a or PART=b}
export PYTHONPATH=.
T0=$(date +%s); S=/tmp/s75; J=/tmp/junk_s75; L=$S/logs_$PART; mkdir -p $S $J $L
trap 'tar -czf $OUT/$TAG.tgz -C /tmp s75' EXIT
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo "not an H200"; nvidia-smi -L; exit 0; }
{ nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader; date -u; git log -1 --format=%H; } > $L/gpu.txt
SW="python3 -m mok_kernels.space_sweep --gemm-phases"
TS=$(ls calibration/table_shapes/*.toml | paste -sd,)
NARROW="--shapes $TS --per-shape 6 --eps 8,32 --tokens 256,1024,4096 --seed 22"
GROUPS="deepseek-v3,kimi-k2,qwen3-30b-a3b glm-4.5,glm-5,minimax-m2 qwen3-235b-a22b,qwen3-next-80b-a3b gpt-oss-120b,mixtral-8x7b llama4-maverick"
# resuming on a fresh machine (call a's machine lost): SPACE_DONE=<call a's space.jsonl[.gz], committed>
[ -n "$SPACE_DONE" ] && [ ! -s $S/space.jsonl ] && zcat -f $SPACE_DONE > $S/space.jsonl
for g in $GROUPS; do     # the plan's shapes compiled, untimed, five processes (a: the space, b: 128 / 512)
  if [ $PART = a ]; then
    timeout 200 $SW --compile-only --models $g --deadline-s 190 < /dev/null > $J/warm_$g.log 2>&1 &
  else
    timeout 100 $SW --compile-only --models $g --tokens 128,512 --deadline-s 90 < /dev/null \
      > $J/warm_t_$g.log 2>&1 &
  fi
done
wait
[ $PART = b ] && timeout 100 $SW --compile-only $NARROW --deadline-s 90 < /dev/null > $J/warm_narrow.log 2>&1
tail -n 2 $J/*.log > $L/warmup_tails.log 2>&1
echo "warm-up $(( $(date +%s) - T0 )) s" >> $L/gpu.txt
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active \
  --format=csv -lms 500 > $L/clocks.csv 2>&1 & CLOCKS=$!
left() { echo $(( 560 - ($(date +%s) - T0) )); }
skip() { [ -s $1 ] && echo "--skip-done $1"; }     # resume where an earlier call stopped
timeout $(left) $SW $(skip $S/space.jsonl) --out $S/space.jsonl --deadline-s $(( $(left) - 15 )) \
  < /dev/null > $L/space.log 2>&1
if [ $PART = b ]; then
  timeout $(left) $SW --tokens 128,512 $(skip $S/t128_512.jsonl) --out $S/t128_512.jsonl \
    --deadline-s $(( $(left) - 15 )) < /dev/null > $L/t128_512.log 2>&1
  timeout $(left) $SW $NARROW $(skip $S/narrow.jsonl) --out $S/narrow.jsonl \
    --deadline-s $(( $(left) - 10 )) < /dev/null > $L/narrow.log 2>&1
fi
kill $CLOCKS 2>/dev/null
n() { [ -f $1 ] && wc -l < $1 || echo 0; }
echo "end $(( $(date +%s) - T0 )) s: space $(n $S/space.jsonl) of 756, 128/512 $(n $S/t128_512.jsonl) of 252, narrow $(n $S/narrow.jsonl) of 36" >> $L/gpu.txt
cat $L/gpu.txt
