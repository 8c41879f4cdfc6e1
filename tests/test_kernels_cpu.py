"""CPU tests of the kernel backend: reference layer, schedule builder vs a pure-Python oracle,
baselines, record writing, and `mok bench` refusing without CUDA."""

from __future__ import annotations

import dataclasses
import json
import math
import re
from pathlib import Path

import pytest
import torch

from mok_kernels import reference as ref
from mok_kernels.baselines import LocalExperts, torch_grouped_rank
from mok_kernels.routing import make_routing
from mok_kernels.schedule import (CapacityOverflowError, build_schedule, capacity_rows,
                                  group_overflow)


def _setup(p=2, n=12, e=8, k=3, h=16, i=8, ishared=8, routing="uniform", seed=0):
    w = ref.random_weights(e, h, i, ishared, seed=seed, dtype=torch.float64)
    x = torch.randn(p, n, h, dtype=torch.float64, generator=torch.Generator().manual_seed(seed + 1))
    ids, wts = make_routing(p * n, e, k, routing, seed)
    return w, x, ids.view(p, n, k), wts.view(p, n, k).double()


def test_reference_matches_dense_loop():
    w, x, ids, wts = _setup()
    out = ref.moe_reference(x[0], ids[0], wts[0], w)
    # independent dense computation, token by token
    for t in range(x.shape[1]):
        acc = ref.swiglu_ffn(x[0, t:t + 1], w.sg, w.su, w.sd)[0]
        for j in range(ids.shape[2]):
            e = int(ids[0, t, j])
            acc = acc + float(wts[0, t, j]) * ref.swiglu_ffn(x[0, t:t + 1], w.wg[e], w.wu[e], w.wd[e])[0]
        assert torch.allclose(out[t], acc, rtol=1e-5, atol=1e-6)


def test_rank_output_equals_single_device_layer():
    w, x, ids, wts = _setup(p=4, e=8)
    for r in range(4):
        a = ref.rank_output(r, x, ids, wts, w, ep=4)
        b = ref.moe_reference(x[r], ids[r], wts[r], w)
        assert torch.allclose(a, b, rtol=1e-6, atol=1e-7)
    # every route is served by exactly one owner
    masks = [ref.served_outputs(q, x, ids, w, 4)[1] for q in range(4)]
    assert torch.equal(sum(m.int() for m in masks), torch.ones_like(ids, dtype=torch.int32))


def test_reference_autograd():
    w, x, ids, wts = _setup()
    xg = x[0].clone().requires_grad_(True)
    wd = w.wd.clone().requires_grad_(True)
    w2 = ref.MoEWeights(w.wg, w.wu, wd, w.sg, w.su, w.sd)
    ref.moe_reference(xg, ids[0], wts[0], w2).sum().backward()
    assert xg.grad is not None and torch.isfinite(xg.grad).all() and xg.grad.abs().sum() > 0
    used = ids[0].unique()
    assert wd.grad[used].abs().sum() > 0
    unused = [e for e in range(8) if e not in used.tolist()]
    if unused:
        assert wd.grad[unused].abs().sum() == 0


def test_summation_order_is_fixed():
    w, x, ids, wts = _setup()
    a = ref.moe_reference(x[0].float(), ids[0], wts[0].float(), w.to(torch.float32))
    b = ref.moe_reference(x[0].float(), ids[0], wts[0].float(), w.to(torch.float32))
    assert torch.equal(a, b)


def oracle(ids: list[list[int]], ep: int, e: int, rank, mult: float, mb: int, bm: int,
           rotated: bool = False) -> dict:
    """Pure-Python schedule: routes per local expert in source order (rotated: from the rank
    after the receiving one), tiles, minibatches."""
    pn, k = len(ids), len(ids[0])
    n, el = pn // ep, e // ep
    cap_rank = math.ceil(mult * ep * n * min(k, el))
    lo, hi, cap = (0, e, ep * cap_rank) if rank is None else (rank * el, (rank + 1) * el, cap_rank)
    shift = ((rank + 1) * n * k) % (pn * k) if rotated else 0
    order = [(g + shift) % (pn * k) for g in range(pn * k)]
    rows = []
    per_exp = []
    for ex in range(lo, hi):
        lst = [(f // k, f) for f in order if ids[f // k][f % k] == ex]
        per_exp.append(len(lst))
        rows += [(ex - lo, s, f) for s, f in lst]
    if rank is None:
        over = sum(max(0, sum(per_exp[q * el:(q + 1) * el]) - cap_rank) for q in range(ep))
    else:
        over = max(0, len(rows) - cap)
    kept = rows[:cap]
    tiles = []
    start = 0
    for le in range(hi - lo):
        cnt = sum(1 for r in kept if r[0] == le)
        for j in range(0, cnt, bm):
            tiles.append((le, start + j, min(bm, cnt - j)))
        start += cnt
    nmb = (len(kept) + mb - 1) // mb
    mb_tile = []
    for m in range(nmb + 1):
        idx = [t for t, tile in enumerate(tiles) if tile[1] >= m * mb]
        mb_tile.append(idx[0] if idx else len(tiles))
    return dict(kept=kept, tiles=tiles, nmb=nmb, mb_tile=mb_tile, over=over, cap=cap)


@pytest.mark.parametrize("ep,rank,routing,mult,mb,bm,rotated", [
    (1, 0, "uniform", 1.0, 7, 4, False),
    (4, 1, "zipf:1.2", 0.5, 10, 4, False),
    (4, 0, "onehot", 0.3, 5, 8, False),      # overflows
    (4, None, "uniform", 0.5, 16, 4, False),  # virtual ranks
    (2, 1, "hot:0.3", 2.0, 64, 16, False),   # capacity above all routes
    (4, 1, "zipf:1.2", 0.5, 10, 4, True),    # sources from rank 2: 2, 3, 0, 1
    (4, 3, "uniform", 1.0, 7, 4, True),      # the last rank: rank order
    (4, 0, "onehot", 0.3, 5, 8, True),       # overflows: the rows past capacity differ
    (1, 0, "uniform", 1.0, 7, 4, True),
])
def test_schedule_matches_oracle(ep, rank, routing, mult, mb, bm, rotated):
    e, k, n = 8, 3, 10
    ids, _ = make_routing(ep * n, e, k, routing, seed=3)
    s = build_schedule(ids, ep=ep, num_experts=e, rank=rank, capacity_multiplier=mult,
                       minibatch=mb, block_m=bm, rotated=rotated)
    o = oracle(ids.tolist(), ep, e, rank, mult, mb, bm, rotated)
    assert s.capacity == o["cap"]
    tot = int(s.total)
    assert tot == len(o["kept"])
    assert s.recv_expert[:tot].tolist() == [r[0] for r in o["kept"]]
    assert s.recv_src[:tot].tolist() == [r[1] for r in o["kept"]]
    assert s.recv_slot[:tot].tolist() == [r[2] for r in o["kept"]]
    assert (s.recv_expert[tot:] == -1).all()
    nt = int(s.num_tiles)
    got = list(zip(s.tile_expert[:nt].tolist(), s.tile_row0[:nt].tolist(), s.tile_rows[:nt].tolist()))
    assert got == o["tiles"]
    assert (s.tile_rows[nt:] == 0).all() and (s.tile_row0[nt:] == tot).all()
    assert int(s.num_mb) == o["nmb"]
    assert s.mb_tile[:o["nmb"] + 1].tolist() == o["mb_tile"]
    rows = [(o["tiles"][t][1] if t < nt else tot) for t in o["mb_tile"]]
    assert s.mb_row[:o["nmb"] + 1].tolist() == rows
    assert int(s.overflow) == o["over"]
    if o["over"]:
        with pytest.raises(CapacityOverflowError, match="overflow"):
            s.check()
    else:
        s.check()


def test_rotated_schedule_holds_the_same_rows_and_needs_one_rank():
    """Rotated, an expert's rows are the rank order's, starting at the rank after the receiver
    (rank 1 of 4: sources 2, 3, 0, 1); and it is refused for the virtual ranks' joint build."""
    e, k, n, ep = 8, 2, 12, 4
    ids, _ = make_routing(ep * n, e, k, "uniform", seed=4)
    kw = dict(ep=ep, num_experts=e, rank=1, capacity_multiplier=1.0, minibatch=8, block_m=4)
    a, b = build_schedule(ids, **kw), build_schedule(ids, rotated=True, **kw)
    assert torch.equal(a.counts, b.counts) and torch.equal(a.tile_rows, b.tile_rows)
    for ex in range(int(a.num_local)):
        lo, hi = int(a.offsets[ex]), int(a.offsets[ex + 1])
        src_a = (a.recv_src[lo:hi] // n).tolist()
        src_b = (b.recv_src[lo:hi] // n).tolist()
        assert sorted(a.recv_slot[lo:hi].tolist()) == sorted(b.recv_slot[lo:hi].tolist())
        assert src_b == sorted(src_a, key=lambda q: (q - 2) % ep)
    with pytest.raises(ValueError, match="one receiving rank"):
        build_schedule(ids, **{**kw, "rank": None}, rotated=True)


@pytest.mark.parametrize("ep,rank,routing,rotated", [
    (8, 3, "uniform", False), (4, None, "zipf:1.2", False), (8, 0, "hot:0.2", False),
    (2, 1, "onehot", False), (8, 3, "uniform", True), (8, 0, "hot:0.2", True),
    (4, 2, "zipf:1.2", True)])
def test_a_tiles_rows_of_one_source_are_one_run(ep, rank, routing, rotated):
    """The push lanes copy runs: within a tile, the rows of source s are [row0 + #rows of
    sources before s, row0 + #rows of sources up to s), every row of s and no other; rotated,
    "before" in the receiver's order, (p - rank - 1) mod P (megakernel.py ROT)."""
    e, k, n = 32, 4, 64
    ids, _ = make_routing(ep * n, e, k, routing, seed=5)
    sch = build_schedule(ids, ep=ep, num_experts=e, rank=rank, capacity_multiplier=1.0,
                         minibatch=96, block_m=16, rotated=rotated)
    src = sch.recv_src.tolist()
    assert int(sch.num_tiles) > 4

    def pos(q: int) -> int:
        return (q + ep - 1 - rank) % ep if rotated else q
    for r0, rows in zip(sch.tile_row0.tolist(), sch.tile_rows.tolist()):
        peers = [pos(src[r] // n) for r in range(r0, r0 + rows)]
        for s in range(ep):
            lo = r0 + sum(p < pos(s) for p in peers)
            hi = r0 + sum(p <= pos(s) for p in peers)
            assert [r for r in range(r0, r0 + rows) if src[r] // n == s] == list(range(lo, hi))


@pytest.mark.parametrize("ep,routing,mult", [
    (4, "onehot", 0.3),     # every route to expert 0: rank 0 alone overflows
    (4, "zipf:1.2", 0.5),
    (2, "uniform", 1.0),    # none overflows
    (4, "hot:0.3", 0.4),
])
def test_group_overflow_counts_every_rank(ep, routing, mult):
    """Group mode's epilogue reads the rows dropped on any rank (a peer's drops are this rank's
    tokens): the sum of every rank's own schedule overflow, whichever rank asks."""
    e, k, n = 8, 3, 10
    ids, _ = make_routing(ep * n, e, k, routing, seed=5)
    each = [int(build_schedule(ids, ep=ep, num_experts=e, rank=r, capacity_multiplier=mult,
                               minibatch=8, block_m=4).overflow) for r in range(ep)]
    got = group_overflow(ids, ep=ep, num_experts=e, capacity_multiplier=mult)
    assert got.dtype == torch.int32 and got.shape == (1,)
    assert int(got) == sum(each)
    if routing == "onehot":
        assert each[0] > 0 and sum(each[1:]) == 0   # the case a rank's own schedule misses


@pytest.mark.parametrize("rank", [0, 1, None])
def test_ids_naming_no_expert_count_as_overflow(rank):
    """An id outside [0, E) goes to no rank, so its combine slot would keep a stale value: the
    schedule counts such routes in its overflow word (the epilogue then writes NaN and traps or
    the forward raises), on every rank and in group mode's total; clean ids count nothing."""
    e, k, n, ep = 8, 2, 6, 4
    ids, _ = make_routing(ep * n, e, k, "uniform", seed=3)
    clean = build_schedule(ids, ep=ep, num_experts=e, rank=rank, capacity_multiplier=2.0,
                           minibatch=8, block_m=4)
    assert int(clean.overflow) == 0
    bad = ids.clone()
    bad[1, 0], bad[5, 1], bad[20, 0] = e, -1, 2**40
    sched = build_schedule(bad, ep=ep, num_experts=e, rank=rank, capacity_multiplier=2.0,
                           minibatch=8, block_m=4)
    assert int(sched.overflow) == 3
    with pytest.raises(CapacityOverflowError, match=r"named no expert \(an id outside"):
        sched.check()
    assert int(group_overflow(bad, ep=ep, num_experts=e, capacity_multiplier=2.0)) == 3
    assert int(group_overflow(ids, ep=ep, num_experts=e, capacity_multiplier=2.0)) == 0


def test_capacity_formula():
    assert capacity_rows(16, 1024, 8, 384, 0.5) == 65536
    assert capacity_rows(16, 1024, 8, 64, 1.0) == 16 * 1024 * 4


def test_torch_grouped_rank_matches_reference():
    p, e = 2, 8
    w, x, ids, wts = _setup(p=p, e=e, n=16, h=16, i=8)
    xf, wf = x.float(), w.to(torch.float32)
    home = torch.zeros(p * 16, 16)
    shared = None
    for r in range(p):
        ex = LocalExperts(wf, r * 4, (r + 1) * 4, "cpu", torch.float32)
        part, sh = torch_grouped_rank(xf.view(p * 16, -1), ids.view(p * 16, -1),
                                      wts.view(p * 16, -1).float(), ex, r, 16)
        home += part
        if r == 0:
            shared = sh
    want = ref.moe_reference(xf[0], ids[0], wts[0].float(), wf)
    got = home[:16] + shared
    assert torch.allclose(got, want, rtol=1e-4, atol=1e-5)


def _nccl_worker(rank: int, world: int, port: int, q, system: str = "nccl-torch") -> None:
    import torch.distributed as dist
    from mok_kernels.baselines import CapacityA2A, nccl_torch_forward
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    w, x, ids, wts = _setup(p=world, e=8, n=10, routing="onehot" if system == "graph-a2a" else "uniform")
    wf = w.to(torch.float32)
    ex = LocalExperts(wf, rank * 4, (rank + 1) * 4, "cpu", torch.float32)
    if system == "graph-a2a":   # onehot: rank 0 receives far more rows than rank 1
        a2a = CapacityA2A(ex, world, 10, ids.shape[-1], x.shape[-1], "cpu", dtype=torch.float32)
        out = a2a.forward(x[rank].float(), ids[rank], wts[rank].float())
    else:
        out = nccl_torch_forward(x[rank].float(), ids[rank], wts[rank].float(), ex, world)
    want = ref.moe_reference(x[rank].float(), ids[rank], wts[rank].float(), wf)
    q.put((rank, float((out - want).abs().max())))
    dist.destroy_process_group()


def _two_ranks(args, worker) -> dict:
    """Run worker(*args(rank, port, queue)) in 2 spawned processes; {rank: what each put}."""
    import socket
    import torch.multiprocessing as mp
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=worker, args=args(r, port, q)) for r in range(2)]
    for pr in procs:
        pr.start()
    for pr in procs:
        pr.join(120)
        assert pr.exitcode == 0
    return dict(q.get() for _ in range(2))


@pytest.mark.parametrize("system", ["nccl-torch", "graph-a2a"])
def test_unfused_baselines_on_gloo_two_ranks(system):
    errs = _two_ranks(lambda r, port, q: (r, 2, port, q, system), _nccl_worker)
    assert max(errs.values()) < 1e-4


def _stall_worker(rank: int, world: int, port: int, q) -> None:
    import torch.distributed as dist
    from mok_kernels.megakernel import stalled_ranks
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=world)
    q.put((rank, stalled_ranks(rank == 1, dist.group.WORLD, "cpu")))
    dist.destroy_process_group()


def test_every_rank_learns_which_ranks_stalled():
    """Group mode's check() is collective: rank 0, whose own waits held, learns that rank 1's
    timed out (its rows in rank 0's output are not usable), and rank 1 learns it of itself."""
    got = _two_ranks(lambda r, port, q: (r, 2, port, q), _stall_worker)
    assert got == {0: [1], 1: [1]}


def test_make_record_validates_and_appends(tmp_path):
    from mok_kernels.bench import make_record, stats
    from mok_model.records import append_records, read_records
    knobs = dict(dispatch="pull", combine="push", minibatch=4096, comm_sms=32,
                 macrobatch=131072, capacity=0.5)
    hw = {"preset": "h200-1", "gpu": "NVIDIA H200", "gpus": 1, "sms": 132, "fabric": "local-hbm",
          "driver": "x"}
    recs = [make_record(system="mok", model="kimi-k2", ep=16, tokens=1024, knobs=knobs,
                        routing=r, seed=0, times=[1.0, 2.0, 3.0, 1.5], breakdown={}, note="t",
                        hardware=hw, software={"torch": "x", "triton": "y", "commit": "z"})
            for r in ("uniform", "zipf:1.2")]
    out = tmp_path / "runs.jsonl"
    assert append_records(out, recs) == 2
    back = read_records([out])
    assert back[0]["emulated_peers"] is True and back[0]["config"] == knobs
    assert back[1]["routing"] == {"kind": "zipf", "seed": 0, "arg": 1.2, "order": "model"}
    assert stats([3.0, 1.0, 2.0])["median"] == 2.0
    assert json.loads(out.read_text().splitlines()[0])["latency_ms"]["n"] == 4


def test_bench_refuses_without_cuda(tmp_path, capsys, monkeypatch):
    from mok_kernels import bench
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    rc = bench.cli(["--out", str(tmp_path / "r.jsonl")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "CUDA" in err[0]
    assert not (tmp_path / "r.jsonl").exists()


def test_package_imports_without_triton():
    """In a fresh interpreter with triton made unimportable (not by reloading the module here,
    which would give later tests' imports other class objects than the ones they hold)."""
    import subprocess
    import sys
    code = ("import sys; sys.modules['triton'] = None\n"
            "import mok_kernels.megakernel as mk\n"
            "cfg = mk.KernelConfig()\n"
            "assert set(cfg.knobs()) == {'dispatch', 'combine', 'minibatch', 'comm_sms', "
            "'macrobatch', 'capacity'}\n"
            "try:\n    mk.KernelConfig(dispatch='both').validate()\nexcept ValueError as e:\n"
            "    assert 'dispatch' in str(e)\nelse:\n    raise SystemExit('not refused')\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       cwd=Path(__file__).resolve().parents[1])
    assert r.returncode == 0, r.stderr


def test_bench_bad_flag_is_one_line(capsys):
    from mok_kernels import bench
    rc = bench.cli(["--out", "x.jsonl", "--iters", "many"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "--iters" in err[0]


@pytest.mark.parametrize("kw,match", [
    (dict(h=100, i=128), r"hidden size H=100 is not a multiple of 64"),
    (dict(h=128, i=128, ishared=64), r"shared width 0 or 128, got 64"),
])
def test_megakernel_refuses_shapes_it_cannot_run(kw, match):
    """Refused at construction with the rule, before any GPU allocation (runs on the CPU)."""
    from mok_kernels.megakernel import MoKLayer
    w = ref.random_weights(4, kw["h"], kw["i"], kw.get("ishared", kw["i"]), seed=0)
    with pytest.raises(ValueError, match=match):
        MoKLayer(w, 2, 8, 2, 0, device="cpu")


@pytest.mark.parametrize("bad,match", [(dict(on_error="ignore"), "on_error"),
                                       (dict(bn_dn=96), "powers of two"),
                                       (dict(tma_a=True, tma=False), "tma_a=True needs tma"),
                                       (dict(tma_a=True, precision="fp8"), "BF16 only"),
                                       (dict(split_dn=3), "split_dn=3: allowed 1, 2, 4, 8, 16"),
                                       (dict(split_dn=0), "split_dn=0: allowed"),
                                       (dict(list_lag=0), "list_lag=0: an integer from 1 to 8"),
                                       (dict(list_lag=9), "list_lag=9"),
                                       (dict(split_dn=4, precision="fp8", block_k=128),
                                        "split along K in BF16 only"),
                                       (dict(dn_blocks=0), "dn_blocks=0: an integer from 1"),
                                       (dict(dn_blocks=True), "dn_blocks=True: an integer"),
                                       (dict(dn_blocks=2, tma=False), "dn_blocks=2 needs"),
                                       (dict(dn_blocks=2, precision="fp8", block_k=128),
                                        "dn_blocks=2 needs precision 'bf16'"),
                                       (dict(dn_blocks=4, skip_gemm=True), "skip_gemm=False"),
                                       (dict(dn_blocks=2, split_dn=4), "split_dn 1")])
def test_kernel_config_refuses_bad_values(bad, match):
    from mok_kernels.megakernel import KernelConfig
    with pytest.raises(ValueError, match=match):
        KernelConfig(**bad).validate()


def test_split_down_workspace_is_sized_or_refused():
    """split_dn's fp32 workspace holds every row tile's down blocks x slices (shared tiles
    first); a layer whose workspace would pass SPLIT_WS_MAX_BYTES is refused at construction
    with the sizes, not allocated."""
    from mok_kernels.megakernel import SPLIT_WS_MAX_BYTES, KernelConfig, MoKLayer
    w = ref.random_weights(8, 256, 384, 384, seed=0)
    cfg = dict(dispatch="pull", combine="push", minibatch=256, comm_sms=4, macrobatch=4096,
               capacity=1.0, tma=False)
    lay = MoKLayer(w, 4, 64, 2, 1, KernelConfig(**cfg, split_dn=4), device="cpu")
    nb_dn = -(-256 // lay.cfg.bn_dn)
    assert lay.split_ws.numel() == lay.ws_tiles * nb_dn * 4 * lay.cfg.block_m * lay.cfg.bn_dn
    assert lay.sync_stride == lay.off["split"] + lay.ws_tiles * nb_dn
    assert MoKLayer(w, 4, 64, 2, 1, KernelConfig(**cfg), device="cpu").split_ws is None
    # 4 ranks x 10,000 tokens x top-2: > 600 row tiles x 16 slices x 128 KB: over the limit
    assert 4 * 10_000 * 2 // 128 * 16 * 128 * 256 * 4 > SPLIT_WS_MAX_BYTES
    with pytest.raises(ValueError, match=r"split_dn=16 needs a .* GiB fp32 workspace"):
        MoKLayer(w, 4, 10_000, 2, 1, KernelConfig(**cfg, split_dn=16), device="cpu")


def test_arena_layout_regions_are_aligned_typed_and_disjoint():
    """Group mode's per-rank arena: every region on a 256-byte boundary, typed, no overlap."""
    from mok_kernels.peers import ARENA_ALIGN, ArenaLayout, byte_offsets
    regions = {"send": (torch.bfloat16, (5, 96)), "ids": (torch.int64, (7, 3)),
               "nmb": (torch.int32, (1,)), "flags": (torch.int32, (10,))}
    lay = ArenaLayout(regions)
    buf = torch.zeros(lay.nbytes, dtype=torch.uint8)
    views = lay.views(buf)
    spans = []
    for name, (dt, shape) in regions.items():
        v = views[name]
        assert v.dtype == dt and tuple(v.shape) == shape
        assert lay.offset[name] % ARENA_ALIGN == 0
        spans.append((lay.offset[name], lay.offset[name] + v.numel() * v.element_size()))
        v.fill_(1)                                   # writes stay inside the region
    spans.sort()
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:])) and spans[-1][1] <= lay.nbytes
    inside = torch.zeros(lay.nbytes, dtype=torch.bool)
    for a, b in spans:
        inside[a:b] = True
    assert not buf[~inside].any()                    # padding between regions untouched
    assert byte_offsets([1024, 1024 + 4096], 1024, "cpu").tolist() == [0, 4096]
    with pytest.raises(ValueError, match="aligned"):
        byte_offsets([1024, 1024 + 100], 1024, "cpu")


def test_symmetric_arena_size_classes():
    from mok_kernels.peers import size_class
    assert size_class(1) == 1 << 21
    assert size_class((1 << 21) + 1) == 1 << 22
    assert size_class(3 << 30) == 4 << 30
    assert all(size_class(n) >= n for n in (5, 1 << 21, 123_456_789))


@pytest.mark.parametrize("ep,rank,fuse", [(1, 0, True), (4, None, True), (4, 2, False)])
def test_load_weights_packs_like_construction(ep, rank, fuse):
    """Training reloads the weights every step: in place (same buffers, so TMA descriptors stay
    valid) and bit for bit the packing a fresh layer makes (runs on the CPU, no launch)."""
    from mok_kernels.megakernel import KernelConfig, MoKLayer
    cfg = dict(dispatch="pull", combine="push", minibatch=256, comm_sms=8, macrobatch=512,
               capacity=1.0, fuse_gu=fuse, tma=fuse)
    w0, w1 = (ref.random_weights(8, 128, 96, 96, seed=s) for s in (0, 1))
    layer = MoKLayer(w0, ep, 16, 2, rank, KernelConfig(**cfg), device="cpu")
    fresh = MoKLayer(w1, ep, 16, 2, rank, KernelConfig(**cfg), device="cpu")
    ptrs = [t.data_ptr() for t in (layer.wg, layer.wu, layer.wd)]
    layer.load_weights(w1)
    assert [t.data_ptr() for t in (layer.wg, layer.wu, layer.wd)] == ptrs
    for a, b in zip((layer.wg, layer.wu, layer.wd), (fresh.wg, fresh.wu, fresh.wd)):
        assert torch.equal(a, b)
    with pytest.raises(ValueError, match="differ from the layer"):
        layer.load_weights(ref.random_weights(8, 128, 64, 64, seed=2))


def _agree_worker(rank: int, port: int, q, minibatch: int) -> None:
    import torch.distributed as dist
    from mok_kernels.peers import check_same_on_every_rank
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    try:
        check_same_on_every_rank(dist.group.WORLD, {
            "tokens per rank": 256, "knobs": {"minibatch": minibatch + rank * (minibatch == 512)}})
        q.put((rank, "ok"))
    except ValueError as exc:
        q.put((rank, str(exc)))
    dist.destroy_process_group()


@pytest.mark.parametrize("minibatch", [1024, 512])
def test_ranks_must_agree_on_shape_and_knobs(minibatch):
    # at 512 rank 1 asks for minibatch 513: every rank refuses, naming the value and each rank's
    got = _two_ranks(lambda r, port, q: (r, port, q, minibatch), _agree_worker)
    if minibatch == 1024:
        assert got == {0: "ok", 1: "ok"}
    else:
        for msg in got.values():
            assert "ranks disagree on knobs" in msg and "rank 1 {'minibatch': 513}" in msg


def test_zipf_popularity_order_is_the_models():
    """The kernels' zipf routing puts the popular experts where the model's does (the rows each
    rank receives agree), and only such zipf records count as reproduced by the model."""
    import numpy as np

    from mok_kernels.routing import make_routing, routing_record
    from mok_model.records import not_predicted, predictable
    from mok_model.workload import make_routing as model_routing
    from mok_model.workload import zipf_order
    for e, k, seed in ((8, 2, 0), (256, 8, 3)):
        ids, _ = make_routing(4 * 4096, e, k, "zipf:1.2", seed + 11, popularity_seed=seed)
        kern = np.bincount(ids.flatten().numpy(), minlength=e) / ids.numel()
        model = np.bincount(model_routing("zipf:1.2", 4, 4096, e, k, seed).flatten(), minlength=e)
        model = model / model.sum()
        assert np.abs(kern - model).max() < 0.01
        assert kern.argmax() == zipf_order(e, seed)[0]
    rec = {"system": "mok", "routing": routing_record("zipf:1.2", 0), "source": "measured"}
    legacy = {"system": "mok", "routing": {"kind": "zipf", "seed": 0, "arg": 1.2},
              "source": "measured"}
    assert predictable(rec) and not predictable(legacy)
    assert "1 zipf records measured before 2026-12-01 03:40 UTC" in not_predicted([rec, legacy])[0]


def test_hot_routing_is_the_models_and_old_few_expert_draws_are_left_out():
    """hot:F gives expert 0 a share F of the routes in the kernels' draw as in the model's (the
    other tokens never pick it); records of the old draw (expert 0 among the others too) count
    as reproduced only where the extra share is small: not mixtral's 8 experts."""
    import numpy as np

    from mok_kernels.routing import make_routing, routing_record
    from mok_model.records import not_predicted, predictable
    from mok_model.workload import make_routing as model_routing
    for e, k, share in ((8, 2, 0.1), (128, 8, 0.1), (16, 2, 0.3)):
        ids, _ = make_routing(4 * 4096, e, k, f"hot:{share}", 5)
        kern = np.bincount(ids.flatten().numpy(), minlength=e) / ids.numel()
        model = np.bincount(model_routing(f"hot:{share}", 4, 4096, e, k, 5).flatten(), minlength=e)
        model = model / model.sum()
        assert abs(kern[0] - share) < 0.01 and np.abs(kern - model).max() < 0.01
        assert (ids == 0).sum(1).max() <= 1                       # distinct per token
    with pytest.raises(ValueError, match="cannot fill"):
        make_routing(16, 4, 4, "hot:0.25", 0)
    new = {"system": "mok", "model": "mixtral-8x7b", "routing": routing_record("hot:0.1", 0),
           "source": "measured"}
    old = {**new, "routing": {"kind": "hot", "seed": 0, "arg": 0.1}}
    many = {**old, "model": "kimi-k2"}        # (1 - 0.8) / 384 of extra share: within 2% of 0.1
    assert predictable(new) and predictable(many) and not predictable(old)
    assert "1 hot records measured before 2026-12-01 13:00 UTC" in not_predicted([new, old])[0]


def test_group_m_rule_per_shape_class():
    """group_m is chosen from the shape (tiles.py): grouped only where one row tile's gate/up
    weights span many column blocks or twice the L2; MoKLayer's padding of I is the rule's."""
    from mok_kernels.megakernel import KernelConfig
    from mok_kernels.tiles import GROUP_M, forward_group_m, padded_width
    assert forward_group_m(14336, 4096) == forward_group_m(8192, 5120) == GROUP_M > 1
    assert forward_group_m(2048, 7168) == forward_group_m(2880, 2880) == forward_group_m(704, 2048) == 1
    assert forward_group_m(4096, 1024, bn_gu=256) == 1 and forward_group_m(4096, 1024) == GROUP_M
    # under WIDE_BLOCKS but a row tile's gate/up weights past L2_SPILL_MIB (session 53's drawn
    # shapes, 98 MiB): grouped; kimi-k2's 56 MiB is not
    assert forward_group_m(3712, 6912) == forward_group_m(3456, 7424) == GROUP_M
    assert forward_group_m(2048, 8192) == GROUP_M and forward_group_m(2048, 7936) == 1
    assert padded_width(2880) == 2944 and padded_width(704) == 768
    KernelConfig(group_m=None).validate()
    for bad in (0, 65, True, 2.0):
        with pytest.raises(ValueError, match="group_m"):
            KernelConfig(group_m=bad).validate()


def test_group_m_rule_reads_records_as_they_ran():
    """A record of a 98 MiB shape timed row tile by row tile (group_m 1, before session 53's
    rule) is another kernel variant now; its group_m 8 run of the same shape is today's."""
    from mok_model.records import default_variant, read_records
    runs = [r for r in read_records(["calibration/runs/h200-tiles/group_ab_s53.jsonl"])
            if r["system"] == "mok"]

    def variants(name):
        return {r["tiles"]["group_m"]: default_variant(r) for r in runs
                if (r["model"]["name"] if isinstance(r["model"], dict) else r["model"]) == name}
    assert variants("syn21-h6912-i3712-e64-k10-s1") == {1: False, 8: True}
    assert variants("kimi-k2") == {1: True, 8: False}


def test_dn_blocks_rule_per_shape_class():
    """dn_blocks is chosen from the shape, EP and tokens (tiles.py): the largest power of two
    with at most DOWN_K_STEPS K steps a down item and at least one expected down item per SM. A
    layer with no GPU to run on (nothing launches) takes 1; a given value wins; with the grid
    given, its programs per rank are the SMs of the rule."""
    from mok_kernels.megakernel import KernelConfig, MoKLayer
    from mok_kernels.tiles import DOWN_K_STEPS, forward_dn_blocks
    assert DOWN_K_STEPS == 48
    qwen3_30b = dict(top_k=8, experts=128, hidden=2048, expert_width=768)     # 12 K steps
    assert forward_dn_blocks(4096, ep=8, sms=132, **qwen3_30b) == 4
    assert forward_dn_blocks(1024, ep=8, sms=132, **qwen3_30b) == 2            # 64 row tiles
    assert forward_dn_blocks(256, ep=32, sms=132, **qwen3_30b) == 1            # 16 row tiles
    assert forward_dn_blocks(256, ep=32, sms=16, **qwen3_30b) == 4             # few SMs a rank
    assert forward_dn_blocks(4096, 8, 128, 32, 4096, 1536, 132) == 2           # qwen3-235b: 24 steps
    assert forward_dn_blocks(4096, 8, 384, 8, 7168, 2048, 132) == 1            # kimi-k2: 32 steps
    assert forward_dn_blocks(4096, 2, 8, 8, 4096, 14336, 132) == 1             # mixtral
    assert forward_dn_blocks(4096, 8, 128, 8, 256, 96, 132) == 1               # one down block
    w = ref.random_weights(16, 2048, 768, 0, seed=0)
    cfg = KernelConfig(dispatch="pull", combine="push", minibatch=4096, comm_sms=16,
                       macrobatch=131072, capacity=1.0)
    assert MoKLayer(w, 8, 1536, 8, 0, cfg, device="cpu").cfg.dn_blocks == 1    # no GPU here
    grid = dataclasses.replace(cfg, grid=132)
    assert MoKLayer(w, 8, 1536, 8, 0, grid, device="cpu").cfg.dn_blocks == 4
    assert MoKLayer(w, 8, 1536, 8, 0, dataclasses.replace(grid, dn_blocks=2),
                    device="cpu").cfg.dn_blocks == 2
    assert MoKLayer(w, 8, 1536, 8, 0, dataclasses.replace(grid, split_dn=2),
                    device="cpu").cfg.dn_blocks == 1                           # split: whole K


def test_split_dn_rule_per_shape_class():
    """split_dn is chosen from the shape, EP and tokens (tiles.py): 4 slices where a rank's down
    phase has at most 32 expected items and K (the expert width) is long; 1 otherwise, for FP8
    and in group mode. The layer resolves split_dn=None with the rule; records name it."""
    from mok_kernels.megakernel import KernelConfig, MoKLayer
    from mok_kernels.tiles import SPLIT_DN, expected_row_tiles, forward_split_dn
    assert expected_row_tiles(64, 2, 8, 8) == 1 and expected_row_tiles(256, 2, 8, 4) == 4
    assert expected_row_tiles(2, 1, 64, 4) == 2          # fewer rows than experts: a tile each
    mixtral = dict(top_k=2, experts=8, hidden=4096, expert_width=14336)
    assert forward_split_dn(64, ep=8, **mixtral) == forward_split_dn(128, ep=8, **mixtral) == SPLIT_DN
    assert forward_split_dn(64, ep=4, **mixtral) == SPLIT_DN
    assert forward_split_dn(256, ep=8, **mixtral) == forward_split_dn(256, ep=4, **mixtral) == 1
    assert forward_split_dn(64, ep=8, precision="fp8", **mixtral) == 1
    assert forward_split_dn(64, 4, 128, 32, 2880, 2880) == 1           # gpt-oss: short K
    assert forward_split_dn(64, 1, 128, 32, 5120, 8192) == 1           # llama4: 80 items
    w = ref.random_weights(8, 256, 4096, 0, seed=0)
    cfg = KernelConfig(dispatch="pull", combine="push", minibatch=256, comm_sms=4,
                       macrobatch=4096, capacity=1.0, tma=False)
    assert MoKLayer(w, 8, 64, 2, 0, cfg, device="cpu").cfg.split_dn == SPLIT_DN
    assert MoKLayer(w, 8, 4096, 2, 0, cfg, device="cpu").cfg.split_dn == 1
    assert MoKLayer(w, 8, 64, 2, 0, dataclasses.replace(cfg, split_dn=1),
                    device="cpu").cfg.split_dn == 1


def test_records_of_the_old_split_are_not_todays_variant():
    """A BF16 forward record is today's variant when its split_dn is the shape's rule: mixtral
    EP 8 at 64 tokens ran split 1 before the rule (not today's), with split 4 since; at 4096
    tokens split 1 is today's."""
    from mok_model.records import default_split_dn, default_variant

    def rec(tokens, tiles):
        return {"system": "mok", "source": "measured", "pass": "fwd", "precision": "bf16",
                "model": "mixtral-8x7b", "ep": 8, "tokens": tokens,
                "hardware": {"preset": "h200-1", "gpus": 1},
                "tiles": {"group_m": 8, "zero_shared_slot": 0, **tiles}}

    assert default_split_dn(rec(64, {})) == 4 and default_split_dn(rec(4096, {})) == 1
    assert not default_variant(rec(64, {})) and default_variant(rec(64, {"split_dn": 4}))
    assert default_variant(rec(4096, {})) and not default_variant(rec(4096, {"split_dn": 4}))
    real = rec(64, {}) | {"hardware": {"preset": "h200-hgx8", "gpus": 2}}
    assert default_split_dn(real) == 1 and default_variant(real)


def _legacy_kernel_draw(n: int, e: int, k: int, s: float, perm: list[int], seed: int):
    """The kernels' zipf draw before commit b03c2ab (mok_kernels/routing.py), on the CPU, with
    the stored torch.randperm permutation in place of the GPU draw: expert j's rank perm[j] + 1,
    logp = -s log(rank), Gumbel top-k."""
    g = torch.Generator().manual_seed(seed)
    ranks = torch.tensor(perm, dtype=torch.float32) + 1.0
    logp = -s * torch.log(ranks)
    u = torch.rand(n, e, generator=g).clamp_min(1e-20)
    return (logp[None, :] - torch.log(-torch.log(u))).topk(k, dim=1).indices


def test_legacy_zipf_order_applies_the_kernels_ranks():
    """The model's torch-cuda-randperm order puts each expert on the popularity rank the old
    kernels gave it (rank perm[j] + 1): per-expert loads of the old formula, recomputed on the
    CPU with the stored permutation, match the model's draw in that order (and not in its own)."""
    import numpy as np

    from mok_model.workload import (legacy_zipf_order, legacy_zipf_table, make_routing,
                                    zipf_order)
    table = legacy_zipf_table()
    assert table["source"]["torch"] == "2.11.0+cu130" and table["source"]["gpu"] == "NVIDIA H200"
    for e, k, seed in ((8, 2, 0), (128, 8, 0), (256, 8, 1)):
        perm = table["perms"][f"{e}:{seed}"]
        order = legacy_zipf_order(e, seed)
        assert [perm[j] for j in order] == list(range(e))   # order[r] has rank r + 1
        ids = _legacy_kernel_draw(4 * 4096, e, k, 1.2, perm, 5)
        kern = np.bincount(ids.flatten().numpy(), minlength=e) / ids.numel()
        legacy = np.bincount(make_routing("zipf:1.2", 4, 4096, e, k, seed,
                                          order="torch-cuda-randperm").ravel(), minlength=e)
        legacy = legacy / legacy.sum()
        model = np.bincount(make_routing("zipf:1.2", 4, 4096, e, k, seed).ravel(), minlength=e)
        model = model / model.sum()
        assert np.abs(kern - legacy).max() < 0.01          # per-expert loads agree
        assert np.abs(kern[order] - legacy[order]).max() < 0.01  # per-rank loads agree
        top = max(2, e // 16)                               # the most popular experts coincide
        assert set(np.argsort(-kern)[:top]) == set(order[:top])
        assert np.abs(kern - model).max() > 0.02            # the model's own order differs
        assert order[0] != zipf_order(e, seed)[0]


def test_legacy_zipf_records_are_read_in_their_order():
    """Zipf records measured before 2026-12-01 03:40 UTC are predicted in the torch.randperm
    order when the table holds their (experts, seed) and torch version; others stay out."""
    from mok_model.errors import MokInputError
    from mok_model.presets import load_hardware, load_model
    from mok_model.records import (not_predicted, predictable, record_scenario,
                                   record_zipf_order, workload_key)
    from mok_model.scenario import Scenario
    from mok_model.workload import traffic
    base = {"system": "mok", "source": "measured", "hardware": {"preset": "h200-hgx8"},
            "model": "mixtral-8x7b", "ep": 8, "tokens": 1024, "pass": "fwd",
            "precision": "bf16", "software": {"torch": "2.11.0+cu130"},
            "routing": {"kind": "zipf", "seed": 0, "arg": 1.2}}
    new = {**base, "routing": {**base["routing"], "order": "model"}}
    other_torch = {**base, "software": {"torch": "2.10.0+cu128"}}
    other_seed = {**base, "routing": {**base["routing"], "seed": 7}}
    assert record_zipf_order(base) == "torch-cuda-randperm" and record_zipf_order(new) == "model"
    assert predictable(base) and predictable(new)
    assert not predictable(other_torch) and not predictable(other_seed)
    assert "2 zipf records" in not_predicted([base, new, other_torch, other_seed])[0]
    assert workload_key(base) != workload_key(new)
    old, cur = record_scenario(base), record_scenario(new)
    assert old.zipf_order == "torch-cuda-randperm" and cur.zipf_order == "model"
    # mixtral EP 8: GPU 0 holds expert 0, the most popular under the old order, the 6th in the
    # model's; both engines read traffic(scenario), which draws the scenario's order
    assert traffic(old).received().argmax() == 0 and traffic(cur).received().argmax() != 0
    hw, m = load_hardware("h200-hgx8"), load_model("mixtral-8x7b")
    with pytest.raises(MokInputError, match="needs zipf routing"):
        Scenario(hw, m, 8, 1024, routing="uniform", zipf_order="torch-cuda-randperm")
    with pytest.raises(MokInputError, match="no torch-cuda-randperm zipf order"):
        Scenario(hw, m, 8, 1024, routing="zipf:1.2", seed=9, zipf_order="torch-cuda-randperm")
    with pytest.raises(MokInputError, match="must be one of"):
        Scenario(hw, m, 8, 1024, routing="zipf:1.2", zipf_order="numpy")


def test_split_down_is_refused_in_group_mode():
    """split_dn > 1 is tested on one GPU only (rank emulation, virtual ranks): group mode (real
    GPUs or a LocalGroup) refuses it at construction instead of running an untested path."""
    from mok_kernels.megakernel import KernelConfig, MoKLayer
    from mok_kernels.peers import LocalGroup
    group = LocalGroup.__new__(LocalGroup)      # no CUDA streams: refused before they are used
    group.size = 2
    w = ref.random_weights(4, 128, 128, 128, seed=0)
    cfg = KernelConfig(dispatch="pull", combine="push", minibatch=256, comm_sms=4,
                       macrobatch=4096, capacity=1.0, split_dn=2)
    with pytest.raises(ValueError, match="split_dn=2 runs on one GPU"):
        MoKLayer(w, 2, 8, 2, 0, cfg, device="cpu", group=group)


def test_tile_sweep_candidate_suffixes():
    """-cNN (copy_rows) and -kNN (split_dn) after a table entry, in either order; anything else is
    not a candidate."""
    from mok_kernels.tile_sweep import CANDIDATES, candidate
    base = "m128-g128-d256-w8-s4"
    assert candidate(base, CANDIDATES) == (base, {})
    assert candidate(base + "-c32-k8", CANDIDATES) == (base, {"copy_rows": 32, "split_dn": 8})
    assert candidate(base + "-k4-c64", CANDIDATES) == (base, {"copy_rows": 64, "split_dn": 4})
    assert candidate(base + "-G3-k4", CANDIDATES) is None            # no such table entry
    assert candidate("m128-g128-d256-w8-s4-G8-A-k4", CANDIDATES) == (
        "m128-g128-d256-w8-s4-G8-A", {"split_dn": 4})
    assert candidate(base + "-x3", CANDIDATES) is None and candidate("nope", CANDIDATES) is None


# --- load_weights copies straight into the packed buffers ---------------------------------------

@pytest.mark.parametrize("ep,rank,i,ishared,fuse_gu,local", [
    (2, None, 80, 80, True, False),     # virtual ranks, I padded 80 -> 96 (a part block)
    (4, 1, 96, 96, True, False),        # one rank, whole blocks
    (4, 3, 80, 0, True, False),         # no shared expert: its slot stays zero
    (2, None, 64, 64, False, False),    # gate and up apart (fuse_gu=False)
    (4, 2, 80, 80, True, True),         # local_weights: the rank's experts only
])
def test_load_weights_equals_construction(ep, rank, i, ishared, fuse_gu, local):
    """A layer built with weights A, then loaded with B, holds bit for bit the buffers of a layer
    built with B (float32 weights in, cast to bf16); its key follows the weights it holds."""
    from mok_kernels.megakernel import KernelConfig, MoKLayer, weights_key
    e, h = 8, 64
    cfg = KernelConfig(dispatch="pull", combine="push", minibatch=32, comm_sms=2, macrobatch=64,
                       capacity=1.0, block_m=32, bn_gu=32, bn_dn=32, block_k=32, copy_rows=16,
                       fuse_gu=fuse_gu, tma=fuse_gu)

    def weights(seed):
        w = ref.random_weights(e, h, i, ishared, seed=seed)
        if local:
            el = e // ep
            w = ref.MoEWeights(w.wg[rank * el:(rank + 1) * el], w.wu[rank * el:(rank + 1) * el],
                               w.wd[rank * el:(rank + 1) * el], w.sg, w.su, w.sd)
        return w

    a, b = weights(1), weights(2)
    lay = MoKLayer(a, ep, 16, 2, rank, cfg, device="cpu", local_weights=local)
    assert lay.loaded_key == weights_key(a)
    lay.load_weights(b)
    fresh = MoKLayer(b, ep, 16, 2, rank, cfg, device="cpu", local_weights=local)
    assert torch.equal(lay.wg, fresh.wg) and torch.equal(lay.wd, fresh.wd)
    assert torch.equal(lay.wu, fresh.wu)
    assert lay.loaded_key == weights_key(b) != weights_key(a)
    b.wg.add_(1.0)                                            # an in-place write: a new key
    assert lay.loaded_key != weights_key(b)


@pytest.mark.parametrize("arch,precision,outcome", [
    ((7, 0), "bf16", "needs BF16 tensor cores (sm_80 or newer)"),
    ((8, 0), "fp8", "precision='fp8' needs e4m3 tensor cores (sm_89 or newer)"),
    ((10, 0), "bf16", "warn"), ((8, 9), "fp8", "warn"), ((9, 0), "fp8", None)])
def test_a_gpu_the_kernel_cannot_run_on_is_refused(monkeypatch, arch, precision, outcome):
    """The megakernel refuses GPUs without the tensor cores it needs and warns, once per
    architecture, where it has not been checked against float32 (only sm_90 has)."""
    import warnings

    from mok_kernels import megakernel as mk

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda dev=None: arch)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda dev=None: "GPU")
    monkeypatch.setattr(mk, "_WARNED_ARCHS", set())
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        if outcome not in (None, "warn"):
            with pytest.raises(ValueError, match=re.escape(outcome)):
                mk.check_gpu("cuda", precision)
            return
        mk.check_gpu("cuda", precision)
        mk.check_gpu("cuda:0", precision)               # once per architecture
    assert len(seen) == (outcome == "warn"), [str(w.message) for w in seen]
    if seen:
        assert "checked against float32 on sm_90" in str(seen[0].message)
    mk.check_gpu("cpu", precision)                      # no GPU: nothing to check


def test_source_order_is_rank_or_rotated_and_not_the_gluon_pass():
    from mok_kernels.megakernel import KernelConfig

    KernelConfig(source_order="rotated").validate()
    with pytest.raises(ValueError, match="source_order 'sideways': allowed rank, rotated"):
        KernelConfig(source_order="sideways").validate()
    with pytest.raises(ValueError, match="source_order='rotated' with fp8_kernel='gluon'"):
        KernelConfig(precision="fp8", fp8_kernel="gluon", source_order="rotated").validate()


def test_trace_summary_reads_the_stamps_and_the_kernel_writes_its_slots():
    """mok_kernels.trace: summarize() on made-up stamps (2 comm programs, 2 compute, 2
    minibatches), and the megakernel's T_* slot constants are trace.SLOTS."""
    import numpy as np

    from mok_kernels.trace import SLOTS, TRACE_COLUMNS, format_summary, summarize

    t = np.zeros((4, TRACE_COLUMNS + 3), dtype=np.int64)
    t[:, SLOTS["start"]] = [1000, 1100, 1000, 1200]
    t[:2, TRACE_COLUMNS:TRACE_COLUMNS + 2] = [[5000, 9000], [6000, 8000]]
    t[:2, SLOTS["comm_end"]] = [9000, 8000]
    t[1, SLOTS["items"]] = 2                      # comm program 1 joined the compute
    t[1:, SLOTS["compute_start"]] = [8500, 2000, 2500]
    t[1:, SLOTS["compute_end"]] = [12000, 14000, 13000]
    t[1:, SLOTS["wait_rows"]] = [0, 4000, 3000]
    t[1:, SLOTS["wait_gu"]] = [1000, 0, 2000]
    t[2:, SLOTS["items"]] = [5, 4]
    s = summarize(t, comm_sms=2, minibatches=2)
    assert s["minibatch_ready_us"] == [5.0, 8.0] and s["minibatch_first_us"] == [4.0, 7.0]
    assert s["comm_end_us"] == 8.0
    assert s["compute_start_us"] == 1.0 and s["compute_end_us"] == 13.0 and s["pass_us"] == 13.0
    assert s["wait_rows_us"] == 7.0 and s["wait_gu_us"] == 3.0 and s["item_programs"] == 3
    assert s["items_per_program"] == [2, 5]
    assert "copied (first-last comm program) at [4.0-5.0, 7.0-8.0] us" in format_summary(s)
    with pytest.raises(ValueError, match="stamps expected"):
        summarize(t, comm_sms=2, minibatches=4)
    src = (Path(__file__).resolve().parent.parent / "mok_kernels" / "megakernel.py").read_text()
    kernel = {m.group(1).lower(): int(m.group(2))
              for m in re.finditer(r"T_([A-Z_]+): tl\.constexpr = (\d+)", src)}
    assert kernel == {**SLOTS, "mb": TRACE_COLUMNS}


def test_trace_is_a_flag_and_not_the_gluon_pass():
    from mok_kernels.megakernel import KernelConfig

    with pytest.raises(ValueError, match="trace='yes': True or False"):
        KernelConfig(trace="yes").validate()
    with pytest.raises(ValueError, match="trace=True with fp8_kernel='gluon'"):
        KernelConfig(precision="fp8", fp8_kernel="gluon", trace=True).validate()


def test_push_loop_is_tiles_or_shares():
    from mok_kernels.megakernel import KernelConfig

    assert KernelConfig().push_loop == "shares"         # the default from session 63
    KernelConfig(push_loop="tiles").validate()
    with pytest.raises(ValueError, match="push_loop 'later': allowed tiles, shares"):
        KernelConfig(push_loop="later").validate()
