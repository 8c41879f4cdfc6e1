#!/bin/bash
# Session 19, device call 5 (nvidia-h200, <= 590 s): the claim policy A/B in one run. Two trees:
# this one (the next item claimed after the current item's K loop, "late") and a copy with
# s19_claim_late.patch reversed (claimed ahead at the loop top, "ahead", the kernel before commit
# of this script). Untimed in parallel: compile warm-up of both. Timed, alone, interleaved
# ahead, late, ahead, late: drawn seed 4's sweep (240 MoK configurations, each output checked
# against float32 before it is timed) and the push-combine join workloads of s18_join.sh.
export PYTHONPATH=.
T0=$(date +%s); R=/tmp/s19/r5; J=/tmp/junk5; mkdir -p $R $J
{ nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader; date -u; } > $R/gpu.txt 2>&1
rm -rf /tmp/ahead && cp -r . /tmp/ahead && (cd /tmp/ahead && patch -R -p1 < benchmarks/device/s19_claim_late.patch > $R/patch.log 2>&1)
SH=$(ls calibration/drawn_shapes/seed4/*.toml | paste -sd,)
A="--shapes $SH --per-shape 6 --tokens 192,640,1792,3584"
FILES=(${SH//,/ })
S2=calibration/drawn_shapes/seed2/syn2-h7936-i6848-e8-k1.toml
S3=calibration/drawn_shapes/seed3/syn3-h7936-i6336-e64-k1.toml
B="python3 -m mok_kernels.bench --rank 0 --capacity 1.0 --systems mok"
G="--routing uniform --dispatch pull --combine push --minibatch 4096 --comm-sms 8,24,32,64"
for tree in . /tmp/ahead; do
  for i in 0 2 4 6 8; do
    (cd $tree && timeout 240 python3 -m mok_kernels.space_sweep $A --compile-only \
       --models ${FILES[$i]},${FILES[$((i+1))]} > $J/c$i$(basename $tree).log 2>&1) &
  done
  (cd $tree && timeout 200 $B --model $S2 --ep 4 --tokens 96 $G --out $J/w.jsonl > /dev/null 2>&1 &&
   timeout 200 $B --model $S3 --ep 32 --tokens 128 $G --out $J/w.jsonl > /dev/null 2>&1) &
done
wait
echo "warm-up $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
for rep in 1 2; do
  for tree in /tmp/ahead .; do
    tag=$([ $tree = . ] && echo late || echo ahead)
    (cd $tree && timeout 60 python3 -m mok_kernels.space_sweep $A --out $R/drawn4_${tag}_$rep.jsonl \
       > $R/d_${tag}_$rep.log 2>&1
     timeout 40 $B --model $S2 --ep 4 --tokens 96 $G --out $R/join_${tag}_$rep.jsonl > $R/j_${tag}_$rep.log 2>&1
     timeout 40 $B --model $S3 --ep 32 --tokens 128 $G --out $R/join_${tag}_$rep.jsonl >> $R/j_${tag}_$rep.log 2>&1)
    echo "$tag $rep $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
  done
done
tar czf $OUT/ab.tgz -C /tmp/s19 r5
