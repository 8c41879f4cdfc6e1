#!/bin/bash
# Session 60 (either card, <= ${LIMIT:-470} s): the rest of seed offset 59000's random shapes
# (its forward 24 passed on an H100 in session 59): local-group + FP8 + Gluon, and the backward,
# in parallel, each against float32. Everything lands in $OUT/s60a.tgz.
exec bash benchmarks/device/random_shapes.sh 59000 s60a rest
