#!/bin/bash
# Session 19, device call 4 (nvidia-h200, <= 590 s): the megakernel claims its next work item after
# the current item's K loop instead of ahead of it (the comm-SM join runs of s18_join.sh showed
# push-combine passes as slow as pull ones once the compute programs alone claim every item two
# deep). Untimed in parallel: the forward kernel's GPU tests (3 shards) and compile warm-up. Timed,
# alone, the same commands as s18_join.sh, s18_minibatch.sh and s18_drawn4.sh's sweep (each MoK
# output checked against float32 before it is timed), to compare with those runs of the same day.
export PYTHONPATH=.
T0=$(date +%s); R=/tmp/s19/r4; J=/tmp/junk4; mkdir -p $R $J
{ nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader; date -u; } > $R/gpu.txt 2>&1
python3 -m pytest --co -q tests/test_kernels_gpu.py 2>/dev/null | grep '::' > $J/ids.txt
split -n r/3 $J/ids.txt $J/shard_
for f in $J/shard_*; do
  xargs -a $f -d '\n' timeout 300 python3 -m pytest -q -rA > $R/t_kernels_${f##*_}.log 2>&1 &
done
SH=$(ls calibration/drawn_shapes/seed4/*.toml | paste -sd,)
A="--shapes $SH --per-shape 6 --tokens 192,640,1792,3584"
FILES=(${SH//,/ })
for i in 0 2 4 6 8; do
  timeout 220 python3 -m mok_kernels.space_sweep $A --models ${FILES[$i]},${FILES[$((i+1))]} \
      --compile-only > $J/c$i.log 2>&1 &
done
wait
echo "tests and warm-up $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
S2=calibration/drawn_shapes/seed2/syn2-h7936-i6848-e8-k1.toml
S3=calibration/drawn_shapes/seed3/syn3-h7936-i6336-e64-k1.toml
B="python3 -m mok_kernels.bench --rank 0 --capacity 1.0 --systems mok,gemm-only"
G="--routing uniform --dispatch pull --combine push,pull --minibatch 4096 --comm-sms 8,16,24,32,48,64"
timeout 100 $B --model $S2 --ep 4 --tokens 96 $G --out $R/join_late.jsonl > $R/ja.log 2>&1
timeout 100 $B --model $S3 --ep 32 --tokens 128 $G --out $R/join_late.jsonl > $R/jb.log 2>&1
echo "join $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
S4=calibration/drawn_shapes/seed4/syn4-h2560-i448-e32-k6.toml
B="python3 -m mok_kernels.bench --rank 0 --combine push --capacity 1.0 --systems mok,gemm-only"
G="--routing uniform --dispatch pull,push --minibatch 512,1024,2048,4096 --comm-sms 32,64"
timeout 80 $B --model $S4 --ep 8 --tokens 1792 $G --out $R/minibatch_list_late.jsonl > $R/ma.log 2>&1
timeout 80 $B --model qwen3-30b-a3b --ep 16 --tokens 2048 $G --out $R/minibatch_list_late.jsonl > $R/mb.log 2>&1
echo "minibatch $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
REM=$(( 585 - ($(date +%s) - T0) ))
timeout $REM python3 -m mok_kernels.space_sweep $A --out $R/drawn4_late.jsonl \
  --deadline-s $(( REM - 15 )) > $R/drawn4.log 2>&1
echo "end $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
tar czf $OUT/claim.tgz -C /tmp/s19 r4
