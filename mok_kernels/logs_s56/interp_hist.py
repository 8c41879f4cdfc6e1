"""Session 56: the schedule's hist kernel (mok_kernels/schedule.py) run by Triton's interpreter on
the CPU, clean ids and ids naming no expert: its bucket counts against torch's, its count of routes
outside [0, E) against the truth (the GPU test is tests/test_kernels_gpu.py -k ids_naming).

    TRITON_INTERPRET=1 PYTHONPATH=.:TRITON_SITE_PACKAGES python mok_kernels/logs_s56/interp_hist.py
"""
import torch

import mok_kernels.schedule as S

ks = S._sched_kernels()
torch.manual_seed(0)
ep, n, k, E = 4, 64, 4, 16
ids = torch.stack([torch.randperm(E)[:k] for _ in range(ep * n)])
bad = ids.clone()
bad[3, 1], bad[70, 0], bad[100, 2], bad[255, 3] = E, -1, E + 5, 2**40
for label, x in (("clean", ids), ("bad", bad)):
    f_all, nloc, e0 = x.numel(), E // ep, 4
    nbin, blk = max(16, 1 << (nloc + 1).bit_length()), 512
    nb = S.triton_cdiv(f_all, blk)
    ints = torch.zeros(nloc + 1 + 5, dtype=torch.int32)
    counts_all, scal = ints[:nloc + 1], ints[nloc + 1:]
    scratch = torch.empty(3, nb * nbin, dtype=torch.int32)
    ks["hist"][(nb,)](x.reshape(-1), scratch[0], scratch[1], counts_all, scal[4:], f_all, e0, nloc,
                      E, 0, NBIN=nbin, BLK=blk, num_warps=4)
    le = x.reshape(-1) - e0
    want = torch.bincount(torch.where((le >= 0) & (le < nloc), le, nloc), minlength=nloc + 1)
    print(label, "bad", int(scal[4]), "want", int(((x < 0) | (x >= E)).sum()), "counts ok",
          torch.equal(counts_all.long(), want))
