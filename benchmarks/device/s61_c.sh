#!/bin/bash
# Session 61 (either card, <= ${LIMIT:-470} s): the rest of seed offset 61000's random shapes
# (its forward half: s61_e.sh): local-group + FP8 + Gluon, and the backward, in parallel, each
# against float32. Everything lands in $OUT/s61c.tgz.
exec bash benchmarks/device/random_shapes.sh 61000 s61c rest
