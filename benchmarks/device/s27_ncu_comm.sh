#!/bin/bash
# Prepared in session 26, NOT RUN (the device time was spent): why the Gluon FP8 pass's comm
# programs copy at only ~12 GB/s of BF16 read each (mok_kernels/NOTES.md "Session 26").
# Nsight Compute on the kernel in three modes (kimi-k2 EP 8, 4,096 tokens, rank 0): comm
# programs only (mode 1), compute only on all programs (mode 2, comm 0, join 0), the pass
# (mode 0). Warp-state and scheduler sections tell issue-bound (the quantizing arithmetic:
# per-row div.rn, conversions) from latency-bound (bytes in flight) from memory-bound. KINDS.md:
# ncu reads counters on the Firecracker runtime only; give it --clock-control none.
export PYTHONPATH=.
R=$OUT/s27ncu; mkdir -p $R
cat > $R/drive.py <<'PY'
import torch
from mok_kernels.bench import Workload
from mok_kernels.gluon_fp8.mok import GluonFP8MoK
wl = Workload("kimi-k2", 8, 4096, "uniform", 0, 0)
sh = wl.shape
layer = GluonFP8MoK(wl.w, 8, 4096, sh.topk, 0, num_experts=sh.experts, local_weights=True)
layer.forward(wl.x, wl.ids, wl.wts)                  # launch 1: the pass fills the ring
for knobs in (dict(mode=1), dict(mode=2, comm=0, join=0), dict(mode=0, comm=32, join=350)):
    layer.configure(**knobs)
    layer.forward(wl.x, wl.ids, wl.wts)              # launches 2, 3, 4: profiled
torch.cuda.synchronize()
layer.check()
print("ok")
PY
timeout 500 ncu --clock-control none --kernel-name fp8_mok_kernel --launch-skip 1 \
  --launch-count 3 --section SpeedOfLight --section WarpStateStats --section SchedulerStats \
  --section MemoryWorkloadAnalysis --section LaunchStats python3 $R/drive.py > $R/ncu.txt 2>&1
echo "exit $?" >> $R/ncu.txt
grep -E "fp8_mok_kernel|Duration|Issue Slots Busy|No Eligible|Stall|Memory Throughput|DRAM Throughput|Compute \(SM\) Throughput|exit|ok$|rror" $R/ncu.txt | head -80
