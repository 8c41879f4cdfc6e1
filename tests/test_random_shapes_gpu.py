"""Randomized shapes on the GPU: forward BF16, FP8 (Triton and Gluon) and backward against the
float32 reference.

The other GPU tests pick shapes by hand (every preset, H not a multiple of 1024, ...). These draw
shapes the project never chose, from a fixed seed so a failure names a reproducible case: any H
the kernel accepts (a multiple of block_k), any I (padded to whole column blocks inside), one to
eight experts per rank, top-1 to top-8, token counts that are not multiples of anything, every
dispatch/combine pair, small and large minibatches, rings small enough to back-pressure,
group_m, activation tiles through TMA (tma_a, forward), the work list's lag (list_lag 1-8,
forward) and the down blocks a work item walks (dn_blocks 1-8 or the layer's choice, forward);
the Gluon FP8 pass (fp8_kernel="gluon": the FP8 draws as it runs them, one emulated rank with
pull / push and capacity 1.0, any I zero-padded to whole 128-column blocks inside, a shape it
refuses raising its refusal, and draws with I a multiple of 128); and group mode (LocalGroup:
each of 2 or 4 ranks its own launch on one GPU, the cross-GPU protocol of epoch flags, routing
exchange, remote rings and signals), two passes of fresh tokens per case. Each case id prints
its seed and whole shape.
MOK_RANDOM_SHAPES_SEED=<offset> draws other cases (seeds offset from the fixed ones) and
MOK_RANDOM_SHAPES_COUNT=<n> draws n per kind beside the default 24 / 8 / 8 / 8 / 8 (forward /
FP8 / backward / group / Gluon), so a run can check shapes no earlier run drew; a failure's id
reproduces it.
Skipped without CUDA.
"""

from __future__ import annotations

import os
import re

import numpy as np
import pytest
import torch

pytestmark = pytest.mark.gpu
if not torch.cuda.is_available():  # pragma: no cover - CPU CI
    pytest.skip("needs a CUDA GPU", allow_module_level=True)

from mok_kernels.backward import training_tiles  # noqa: E402
from tests import test_backward_gpu as bwd_tests  # noqa: E402
from tests.test_fp8_gpu import check as check_fp8, run_fp8  # noqa: E402
from mok_kernels.reference import MoEWeights  # noqa: E402
from tests.test_gluon_fp8_gpu import gluon_layer, needs_sm90, run_gluon  # noqa: E402
from tests.test_kernels_gpu import run_case, run_local_group  # noqa: E402

ROUTINGS = ["uniform", "zipf:1.2", "hot:0.1", "onehot"]
ELEMENTS = 6e8       # cap on E*H*I*3 weights (drawn on the CPU; bf16 + float32 copies)


def draw(seed: int, h_step: int, max_h: int, bwd: bool = False) -> dict:
    """One random accepted case (shape, mode, knobs) from ``seed``."""
    r = np.random.default_rng(seed)
    ep = int(r.choice([1, 2, 4, 8, 16]))
    rank = None if (ep <= 8 and r.random() < 0.35) else int(r.integers(ep))
    el = int(r.integers(1, 9))
    e = ep * el
    k = int(r.integers(1, min(8, e) + 1))
    while True:
        h = h_step * int(r.integers(2, max_h // h_step + 1))
        i = int(r.integers(24, 3100))
        if e * h * i * 3 <= ELEMENTS:
            break
    shared = bool(r.random() < 0.5)
    n = int(r.integers(1, 300 if (rank is None or bwd) else 700))
    routing = str(r.choice(ROUTINGS))
    if routing.startswith("hot") and k > e - 1:    # the other experts cannot fill top_k
        routing = "onehot"
    tma_a = bool(r.random() < 0.5)      # drawn after the rest: the earlier draws stay what they were
    list_lag = int(r.choice([1, 2, 3, 4, 8]))   # forward BF16 only; drawn last for the same reason
    c = dict(seed=seed, ep=ep, rank=rank, routing=routing, tma_a=tma_a, list_lag=list_lag,
             dispatch=str(r.choice(["pull", "push"])), combine=str(r.choice(["pull", "push"])),
             minibatch=int(r.choice([64, 128, 200, 256, 384, 512, 1000])),
             macro=int(r.choice([131072, 131072, 1024])),
             group_m=int(r.choice([1, 2, 8])),
             shape=dict(e=e, h=h, i=i, i_shared=i if shared else 0, n=n, k=k))
    # forward BF16 only (0: the layer's choice); drawn after everything else, so every case
    # drawn before it (session 42) keeps its shape and knobs
    c["dn_blocks"] = int(r.choice([0, 1, 2, 3, 4, 8]))
    # the push lanes' loop (KernelConfig.push_loop: session 61 'ahead', 62 'lists', 63
    # 'shares'; used where the dispatch is push), drawn last for the same reason
    c["push_loop"] = str(r.choice(["tiles", "shares"]))
    return c


def case_id(c: dict) -> str:
    s = c["shape"]
    return (f"s{c['seed']}-ep{c['ep']}-r{c['rank']}-E{s['e']}-H{s['h']}-I{s['i']}-S{s['i_shared']}-n{s['n']}"
            f"-k{s['k']}-{c['routing']}-{c['dispatch']}-{c['combine']}-mb{c['minibatch']}"
            f"-ring{c['macro']}-gm{c['group_m']}" + ("-tmaA" if c["tma_a"] else "")
            + (f"-lag{c['list_lag']}" if c["list_lag"] != 1 else "")
            + (f"-dnb{c['dn_blocks']}" if c.get("dn_blocks") else "")
            + ("-shares" if c.get("push_loop") == "shares" and c["dispatch"] == "push" else ""))


OFFSET = int(os.environ.get("MOK_RANDOM_SHAPES_SEED", "0"))
COUNT = os.environ.get("MOK_RANDOM_SHAPES_COUNT")


def _count(default: int) -> int:
    return default if COUNT is None else int(COUNT)


FWD = [draw(OFFSET + 1000 + j, 64, 8192) for j in range(_count(24))]
FP8 = [draw(OFFSET + 2000 + j, 128, 8192) for j in range(_count(8))]
BWD = [draw(OFFSET + 3000 + j, 64, 4096, bwd=True) for j in range(_count(8))]


def draw_group(seed: int) -> dict:
    """A forward case for group mode: draw()'s shape and knobs on 2 or 4 ranks, every rank's
    output checked (group mode has no virtual-rank or emulated form)."""
    c = draw(seed, 64, 4096)
    r = np.random.default_rng([seed, 1])
    ep = int(r.choice([2, 4]))
    s = dict(c["shape"])
    s["e"] = ep * max(1, s["e"] // c["ep"])
    s["k"] = min(s["k"], s["e"])
    s["n"] = min(s["n"], 300)
    routing = c["routing"]
    if routing.startswith("hot") and s["k"] > s["e"] - 1:
        routing = "onehot"
    return {**c, "ep": ep, "rank": "all", "routing": routing, "shape": s, "tma_a": False,
            "group_m": 8, "dn_blocks": 0}


GROUP = [draw_group(OFFSET + 4000 + j) for j in range(_count(8))]


def gluon_case(c: dict) -> dict:
    """A draw as the Gluon FP8 pass runs it: one emulated rank (a virtual-ranks draw takes rank
    seed mod EP), pull dispatch, push combine (the draw's ring and group_m do not apply)."""
    rank = c["rank"] if c["rank"] is not None else c["seed"] % c["ep"]
    return {**c, "rank": rank, "dispatch": "pull", "combine": "push", "tma_a": False,
            "list_lag": 1, "group_m": 8}


def draw_gluon(seed: int) -> dict:
    """An FP8 draw with I (and the shared width) rounded up to a multiple of 128."""
    c = draw(seed, 128, 8192)
    s = dict(c["shape"])
    s["i"] = -(-s["i"] // 128) * 128
    s["i_shared"] = s["i"] if s["i_shared"] else 0
    return gluon_case({**c, "shape": s})


GLUON = [gluon_case(c) for c in FP8] + [draw_gluon(OFFSET + 5000 + j) for j in range(_count(8))]


@pytest.mark.parametrize("c", FWD, ids=case_id)
def test_random_shape_forward(c):
    r_out, r_served, _, _ = run_case(c["ep"], c["rank"], c["routing"], c["dispatch"], c["combine"],
                                     c["minibatch"], macro=c["macro"], seed=7, shape=c["shape"],
                                     group_m=c["group_m"], tma_a=c["tma_a"], list_lag=c["list_lag"],
                                     dn_blocks=c["dn_blocks"] or None, push_loop=c["push_loop"])
    assert r_served <= 1e-2 and r_out <= 1e-2, (r_served, r_out)


@pytest.mark.parametrize("c", GROUP, ids=case_id)
def test_random_shape_local_group(c):
    errs, _, _ = run_local_group(c["ep"], c["dispatch"], c["combine"], shape=c["shape"],
                                 routing=c["routing"], passes=2, seed=7,
                                 minibatch=c["minibatch"], macro=c["macro"],
                                 list_lag=c["list_lag"], push_loop=c["push_loop"])
    assert max(errs) <= 1e-2, errs


@pytest.mark.parametrize("c", FP8, ids=case_id)
def test_random_shape_fp8(c):
    quant, plain, _, _ = run_fp8(c["ep"], c["rank"], c["routing"], c["dispatch"], c["combine"],
                                 c["shape"], minibatch=c["minibatch"], macro=c["macro"], seed=7,
                                 group_m=c["group_m"], push_loop=c["push_loop"])
    check_fp8(quant, plain)


@needs_sm90
@pytest.mark.parametrize("c", GLUON, ids=case_id)
def test_random_shape_gluon_fp8(c):
    from mok_kernels.gluon_fp8.mok import refusal
    s = c["shape"]
    why = refusal(s["h"], s["i"], s["i_shared"], s["e"], c["ep"], c["rank"])
    if why:            # refused before the weights are read: their shapes alone, no memory
        z = lambda *d: torch.zeros(()).expand(*d)  # noqa: E731
        e, h, i, sh = s["e"], s["h"], s["i"], s["i_shared"]
        w = MoEWeights(z(e, h, i), z(e, h, i), z(e, i, h),
                       *((z(h, sh), z(h, sh), z(sh, h)) if sh else (None,) * 3))
        with pytest.raises(ValueError, match=re.escape(why)):
            gluon_layer(w, c["ep"], c["rank"], s, minibatch=c["minibatch"])
        return
    quant, plain, _, _ = run_gluon(c["ep"], c["rank"], c["routing"], s, minibatch=c["minibatch"],
                                   seed=7)
    check_fp8(quant, plain)


@pytest.mark.parametrize("c", BWD, ids=case_id)
@pytest.mark.parametrize("saved", [False, True], ids=["recompute", "saved"])
def test_random_shape_backward(c, saved):
    tiles = training_tiles() if saved else None      # saved: the training path's tiles
    bwd_tests.run_case(c["ep"], c["rank"], c["routing"], c["minibatch"], seed=7, shape=c["shape"],
                       tiles=tiles)
