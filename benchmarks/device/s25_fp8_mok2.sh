#!/bin/bash
# Prepared in session 25, NOT RUN (its device time ran out): the Gluon FP8 MoK pass
# (benchmarks/gluon_fp8_mok.py) split and improved, kimi-k2 and glm-5 EP 8, 4,096 tokens,
# uniform routing, rank 0, one device run. Checks first (16 comm programs, each distinct code
# path of V: default, join, ys+join, cu2+join; every rank vs the FP8 reference and float32,
# every slot written, bitwise the default's output and over 3 repeats); a variant whose path
# failed is not timed.
# Variants (parse_variant): mode=comm (comm programs only, no items, no epilogue),
# mode=compute (copies skipped, landed-row counters preset, ring as the last pass left it, no
# epilogue; +comm=0+join=0: all 132 programs compute), comm=16/48, join=P (comm programs take
# items of the list's last (1000-P)/1000 too), cu2 (2 K blocks of a comm copy in flight), ys (q
# and y through shared memory, 16-byte stores). sm_90 compile on the CPU (Triton 3.6): all
# builds 168 registers, setmaxnreg 240 / 240 / 24; spills cu1 88/192, cu2 84/204, cu1 ys
# 144/248, cu2 ys 136/256 bytes; shared 196,984 bytes (ys 229,764).
export PYTHONPATH=.
R=$OUT/s25m2; mkdir -p $R
{ nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader; date -u; } > $R/gpu.txt 2>&1
V=default,mode=comm,mode=compute+comm=0+join=0,join=350,join=200,join=500,join=350+ys,join=350+cu2
timeout 170 python3 benchmarks/gluon_fp8_mok.py --iters 20 --warmup 5 --baseline \
  --variants $V > $R/mok2.log 2>&1
echo "exit $?" >> $R/mok2.log
date -u >> $R/gpu.txt
cat $R/gpu.txt
grep -E "FAIL|check " $R/mok2.log | cut -c1-220
tail -n 42 $R/mok2.log | grep -vE "^check "
