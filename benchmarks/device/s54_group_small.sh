#!/bin/bash
# Session 54 (an H100 or H200, <= 300 s): group_m 8 against 1 where a rank's local experts hold
# about one row tile each. Seed 21 on an H100 read the shape session 53's 64 MiB rule groups
# (syn21-h6912-i3712-e64-k10-s1) 3.4-5.2% slower at EP 4 x 128 tokens (80 rows an expert) on
# all four settings timed, beside 0.64-0.92x at 2,048-6,144 tokens
# (mok_kernels/logs_s54/drawn21_group_rule_ab.txt). Written before the run: where a local expert
# has one row tile, grouping shares no weight block between row tiles, so group_m 8 reads >= 0.99x
# ungrouped (the activation rows of a row tile lose their reuse across the SMs that run its column
# blocks); from two row tiles an expert the spill shapes gain. The 32-block rule's llama4-maverick
# (8 rows an expert at EP 8 x 128, top-1) and mixtral-8x7b (two row tiles at EP 8 x 128) are the
# wide-expert controls. Uniform routing, pull / push, minibatch 2,048, each output checked.
S=calibration/drawn_shapes/seed21
W=$S/syn21-h6912-i3712-e64-k10-s1.toml:4:128,$S/syn21-h6912-i3712-e64-k10-s1.toml:4:640,$S/syn21-h7424-i3456-e16-k1-s1.toml:4:128,$S/syn21-h7424-i3456-e16-k1-s1.toml:4:640,llama4-maverick:8:128,llama4-maverick:8:1024,mixtral-8x7b:8:128 \
  DEADLINE=${DEADLINE:-200} bash benchmarks/device/s53_group_ab.sh
