#!/bin/bash
# Session 33, backward call 1: the A items' dOut and Wd tiles by tensor descriptors (a_tma=1)
# checked (GPU tests against float32, bits over repeats) and probed against the training tiles,
# whole pass and A items alone (diag=3), kimi-k2 / glm-5 EP 8 rank 0, 1,024 / 4,096 tokens,
# each beside the GEMMs alone in the same run. nvidia-h200.
export PYTHONPATH=.
T0=$(date +%s); R=$OUT/s33t; mkdir -p $R
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo "not an H200"; exit 0; }
{ nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader; date -u; git log -1 --format=%H; } > $R/gpu.txt 2>&1
timeout 220 python3 -m pytest -n 4 -v -rA -p no:cacheprovider tests/test_backward_gpu.py \
  -k "a_tma or a_epi_bits" > $R/t_tma.log 2>&1
echo "tests $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
T="saved_gu=1,bn_a=256,a_epi=128,bn_x=256,w_direct=1,w_bf16=1"
V="$T;$T,a_tma=1;$T,a_tma=1,num_stages=2;$T,diag=3;$T,a_tma=1,diag=3"
for M in kimi-k2 glm-5; do for N in 4096 1024; do
  timeout 90 python3 benchmarks/device/s32_bwd_probe.py $M $N "$V" >> $R/probe_tma.log 2>&1
done; done
echo "probe $(( $(date +%s) - T0 )) s" >> $R/gpu.txt
grep -hE " passed| failed" $R/t_tma.log | tail -n 2; grep -hE "FAILED|Error" $R/t_tma.log | cut -c1-200 | head
cat $R/probe_tma.log | cut -c1-220; cat $R/gpu.txt
