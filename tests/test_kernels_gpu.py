"""GPU tests of the MoK megakernel against the float32 reference (skipped without CUDA)."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from mok_kernels import reference as ref
from mok_kernels.routing import make_routing

pytestmark = pytest.mark.gpu
if not torch.cuda.is_available():  # pragma: no cover - CPU CI
    pytest.skip("needs a CUDA GPU", allow_module_level=True)

from mok_kernels.megakernel import KernelConfig, MegakernelStallError, MoKLayer  # noqa: E402
from mok_kernels.schedule import CapacityOverflowError  # noqa: E402

E, K, H, I, N = 32, 4, 256, 128, 200
# knobs these tests rely on, given explicitly: unset knobs are now chosen by the model
OLD_DEFAULTS = dict(dispatch="pull", combine="push", macrobatch=131072)


def rel(a: torch.Tensor, b: torch.Tensor) -> float:
    """Relative error of a against b; 0 where both are empty (e.g. a rank that serves no route:
    top-1 onehot routing sends every token to rank 0's expert 0)."""
    a, b = a.float(), b.float()
    assert a.shape == b.shape and torch.isfinite(a).all()
    if b.numel() == 0:
        return 0.0
    return float((a - b).norm() / b.norm())


def setup(ep, routing, seed, e=E, h=H, i=I, i_shared=None, n=N, k=K):
    i_shared = i if i_shared is None else i_shared
    w = ref.random_weights(e, h, i, i_shared, seed=seed).to(torch.bfloat16).to(device="cuda")
    wf = w.to(torch.float32)
    g = torch.Generator(device="cuda").manual_seed(seed + 7)
    x = torch.randn(ep * n, h, device="cuda", generator=g).to(torch.bfloat16)
    ids, wts = make_routing(ep * n, e, k, routing, seed, device="cuda")
    return w, wf, x, ids, wts


def run_case(ep, rank, routing, dispatch="pull", combine="push", minibatch=300, capacity=1.0,
             comm=8, macro=131072, seed=0, shape=None, **tiles):
    """One forward compared with the float32 reference. ``shape``: setup()'s e, h, i, i_shared,
    n, k (default the small test shape)."""
    sh = dict(e=E, h=H, i=I, n=N, k=K) | (shape or {})
    n, k = sh["n"], sh["k"]
    w, wf, x, ids, wts = setup(ep, routing, seed, **sh)
    cfg = KernelConfig(dispatch=dispatch, combine=combine, minibatch=minibatch, comm_sms=comm,
                       macrobatch=macro, capacity=capacity, on_error="raise", **tiles)
    layer = MoKLayer(w, ep, n, k, rank, cfg)
    r_out, r_served = compare_with_reference(layer, x, ids, wts, wf, rank)
    return r_out, r_served, layer, (x, ids, wts)


def compare_with_reference(layer, x, ids, wts, wf, rank, fp8=False):
    """Run ``layer`` (rank ``rank`` of its EP group, or all ranks with None) on x, ids, wts and
    compare with the float32 reference (``fp8``: the one that quantizes as the FP8 kernel does):
    (relative error of the home output, relative error of the combine slots this rank served).
    Served slots are poisoned with NaN first, so a slot the kernel skips shows; peers' pushed
    outputs for home routes served elsewhere come from the reference."""
    ep, e, h = layer.ep, int(wf.wg.shape[0]), x.shape[1]
    n, k = x.shape[0] // ep, ids.shape[1]
    y = ref.routed_outputs(x.float(), ids, wf, fp8=fp8)         # (P*N, k, H) every route
    el = e // ep
    if rank is not None:
        lo, hi = rank * el, (rank + 1) * el
        served = (ids >= lo) & (ids < hi)                       # routes this rank serves
        home = slice(rank * n, (rank + 1) * n)
        # peers' pushed combine outputs for home routes served elsewhere: from the reference
        fill = (~served[home]).reshape(-1).nonzero().squeeze(1)
        layer.comb[rank * n * k + fill] = y[home].reshape(-1, h)[fill].to(torch.bfloat16)
    else:
        served = torch.ones_like(ids, dtype=torch.bool)
        home = slice(0, ep * n)
    layer.comb[served.reshape(-1).nonzero().squeeze(1)] = float("nan")   # poison served slots
    out = layer.forward(x, ids, wts)
    torch.cuda.synchronize()
    want = ref.combine(ref.shared_output(x[home].float(), wf, fp8), y[home], wts[home])
    sv = served.reshape(-1).nonzero().squeeze(1)
    return rel(out, want), rel(layer.comb[sv], y.reshape(-1, h)[sv])

def output_and_served_slots(layer, x, ids, wts, rank):
    """One more forward: copies of its home output and of the combine slots this launch served
    (an emulated rank's other slots hold a per-layer random fill, so bits compare on these)."""
    out = layer.forward(x, ids, wts).clone()
    el = layer.el
    served = (torch.ones_like(ids, dtype=torch.bool) if rank is None
              else (ids >= rank * el) & (ids < (rank + 1) * el))
    return out, layer.comb[served.reshape(-1).nonzero().squeeze(1)].clone()


CASES = [
    (1, 0, "uniform", "pull", "push", 300),
    (1, 0, "uniform", "push", "pull", 256),
    (8, 3, "zipf:1.2", "pull", "push", 300),
    (8, 3, "zipf:1.2", "push", "pull", 300),
    (16, 0, "onehot", "pull", "pull", 500),
    (16, 5, "uniform", "push", "push", 384),
    (4, None, "uniform", "pull", "push", 300),
    (4, None, "onehot", "push", "pull", 1000),
]


@pytest.mark.parametrize("ep,rank,routing,dispatch,combine,mb", CASES)
def test_megakernel_matches_reference(ep, rank, routing, dispatch, combine, mb):
    r_out, r_served, _, _ = run_case(ep, rank, routing, dispatch, combine, mb)
    assert r_served <= 1e-2, r_served
    assert r_out <= 1e-2, r_out


@pytest.mark.parametrize("ep,rank,routing,dispatch,combine,mb", [CASES[2], CASES[5], CASES[7]])
def test_pointer_weight_tiles_match_reference(ep, rank, routing, dispatch, combine, mb):
    # weights loaded through plain pointers instead of the default TMA descriptors
    r_out, r_served, _, _ = run_case(ep, rank, routing, dispatch, combine, mb, tma=False)
    assert r_served <= 1e-2, r_served
    assert r_out <= 1e-2, r_out


@pytest.mark.parametrize("lag", [2, 3])
@pytest.mark.parametrize("ep,rank,routing,dispatch,combine,mb,shape", [
    (*CASES[2], None), (*CASES[5], None), (*CASES[7], None),
    # production-like: H not a power of two, several gate/up and down column blocks, narrow
    # experts at many minibatches (where the lag pays) and a wider expert without a shared one
    (8, 3, "zipf:1.2", "pull", "push", 512, dict(h=2560, i=448, e=32, n=300, k=6)),
    (4, None, "uniform", "push", "pull", 256, dict(h=2880, i=1536, e=16, n=200, k=4, i_shared=0))])
def test_list_lag_matches_reference_and_the_bits_of_lag_one(ep, rank, routing, dispatch, combine,
                                                            mb, shape, lag):
    """The work list's lag only reorders the items: the outputs match the float32 reference and
    repeat the bits of the list of lag 1 (several minibatches, a shared expert)."""
    r_out, r_served, layer, (x, ids, wts) = run_case(ep, rank, routing, dispatch, combine, mb,
                                                     shape=shape, list_lag=lag)
    assert r_served <= 1e-2 and r_out <= 1e-2, (r_served, r_out)
    lagged = layer.forward(x, ids, wts).clone()
    _, _, one, _ = run_case(ep, rank, routing, dispatch, combine, mb, shape=shape)
    torch.cuda.synchronize()
    assert torch.equal(one.forward(x, ids, wts), lagged)


def test_group_on_real_gpus():
    """Real ranks (one process per GPU, symmetric memory, NCCL baseline); all GPUs of the host."""
    import subprocess
    import sys
    res = subprocess.run([sys.executable, "-m", "mok_kernels.group_check", "--iters", "3"],
                         capture_output=True, text=True, timeout=600)
    print(res.stdout, res.stderr)
    assert res.returncode == 0, res.stdout + res.stderr


@pytest.mark.parametrize("dispatch", ["pull", "push"])
def test_small_ring_back_pressure(dispatch):
    # ring of minibatch + block_m rows: comm (pull: the receiver's; push: every sender's) must
    # wait for the receiver's compute to free rows
    r_out, r_served, _, _ = run_case(4, None, "uniform", dispatch, "push", 256, macro=1, comm=16)
    assert r_out <= 1e-2 and r_served <= 1e-2


def test_eight_virtual_ranks_push_push():
    r_out, r_served, _, _ = run_case(8, None, "zipf:1.2", "push", "push", 300)
    assert r_out <= 1e-2 and r_served <= 1e-2


def test_bits_identical_over_runs():
    _, _, layer, (x, ids, wts) = run_case(8, 2, "zipf:1.2", "pull", "push", 300)
    first = layer.forward(x, ids, wts).clone()
    for _ in range(9):
        torch.cuda.synchronize()
        assert torch.equal(layer.forward(x, ids, wts), first)
    layer.check()


def test_stalled_wait_raises():
    w, wf, x, ids, wts = setup(4, "uniform", 1)
    cfg = KernelConfig(minibatch=256, comm_sms=8, capacity=1.0, max_spin=3000, on_error="raise",
                       **OLD_DEFAULTS)
    layer = MoKLayer(w, 4, N, K, 1, cfg)
    layer.stall_test = 1   # comm programs never signal minibatch 0
    with pytest.raises(MegakernelStallError, match="ready counter of minibatch 0"):
        layer.forward(x, ids, wts)          # raises: the caller never gets the output
    assert torch.isnan(layer.out.float()).all()   # and the buffer it would have read is NaN
    layer.stall_test = 0
    out = layer.forward(x, ids, wts)
    assert torch.isfinite(out.float()).all()


def test_capacity_overflow_raises():
    w, wf, x, ids, wts = setup(16, "onehot", 2)
    layer = MoKLayer(w, 16, N, K, 0, KernelConfig(minibatch=512, capacity=0.1, comm_sms=32,
                                                  on_error="raise", **OLD_DEFAULTS))
    with pytest.raises(CapacityOverflowError, match="overflow"):
        layer.forward(x, ids, wts)
    assert torch.isnan(layer.out.float()).all()


@pytest.mark.parametrize("mode", ["emulated", "virtual"])
def test_ids_naming_no_expert_raise_never_a_stale_slot(mode):
    """An id outside [0, E) is served by no rank: the schedule's hist kernel counts it into the
    overflow word, so the forward writes NaN and raises instead of summing a stale slot."""
    w, wf, x, ids, wts = setup(4, "uniform", 1)
    bad = ids.clone()
    bad[3, 0], bad[7, 1] = E, -1                  # E experts in setup(): ids 0..E-1
    rank = 0 if mode == "emulated" else None
    layer = MoKLayer(w, 4, N, K, rank, KernelConfig(minibatch=256, capacity=1.0, comm_sms=16,
                                                    on_error="raise", **OLD_DEFAULTS))
    layer.forward(x, ids, wts)                    # clean ids: no error
    with pytest.raises(CapacityOverflowError, match="named no expert"):
        layer.forward(x, bad, wts)
    assert torch.isnan(layer.out.float()).all()


TRAP_SCRIPT = """
import sys, torch
sys.path.insert(0, {root!r})
from tests.test_kernels_gpu import setup, N, K
from mok_kernels.megakernel import KernelConfig, MoKLayer
kind = sys.argv[1]
if kind == "stall":
    w, wf, x, ids, wts = setup(4, "uniform", 1)
    layer = MoKLayer(w, 4, N, K, 1, KernelConfig(minibatch=256, comm_sms=8, capacity=1.0,
                                                 dispatch="pull", combine="push", macrobatch=131072,
                                                 max_spin=3000))
    layer.stall_test = 1
else:
    w, wf, x, ids, wts = setup(16, "onehot", 2)
    layer = MoKLayer(w, 16, N, K, 0, KernelConfig(minibatch=512, capacity=0.1, comm_sms=32,
                                                  dispatch="pull", combine="push", macrobatch=131072))
out = layer.forward(x, ids, wts)     # default on_error="trap": no host sync here
value = float(out.float().sum())     # the caller's own synchronization
print("OUTPUT USED", value)
"""


@pytest.mark.parametrize("kind", ["stall", "overflow"])
def test_default_trap_never_returns_output(kind):
    """on_error="trap": the launch traps and the caller's next synchronization fails."""
    import pathlib
    import subprocess
    import sys
    root = str(pathlib.Path(__file__).resolve().parents[1])
    res = subprocess.run([sys.executable, "-c", TRAP_SCRIPT.format(root=root), kind],
                         capture_output=True, text=True, timeout=300, cwd=root)
    assert res.returncode != 0, res.stdout
    assert "OUTPUT USED" not in res.stdout
    assert "CUDA error" in res.stderr or "illegal instruction" in res.stderr, res.stderr[-2000:]


# Production tile counts: >= 2 gate/up and >= 2 down column blocks, >= 2 copy chunks, H not a
# multiple of 1024, I not a multiple of the gate/up block (gpt-oss, 2880), every model preset's
# (hidden, expert width, shared width) with a few experts per rank.
def _preset_shapes():
    import tomllib
    from pathlib import Path
    path = Path(__file__).resolve().parents[1] / "mok_model" / "presets" / "models.toml"
    models = tomllib.loads(path.read_text())
    return [pytest.param(dict(h=m["hidden"], i=m["expert_width"], i_shared=m["shared_width"]),
                         id=name) for name, m in models.items()]


MODES = [(8, 3, "pull", "push"), (4, None, "push", "pull"), (8, 5, "push", "push"),
         (4, None, "pull", "pull")]


@pytest.mark.parametrize("shape", _preset_shapes())
def test_every_model_preset_shape(shape):
    if shape["i_shared"] not in (0, shape["i"]):
        pytest.skip("shared width differs from expert width: refused at construction")
    idx = (shape["h"] // 64 + shape["i"] // 64) % len(MODES)   # spread modes over shapes
    ep, rank, dispatch, combine = MODES[idx]
    shape = dict(shape, e=2 * ep, n=192, k=4)
    r_out, r_served, _, _ = run_case(ep, rank, "zipf:1.2", dispatch, combine, 300, shape=shape)
    assert r_served <= 1e-2 and r_out <= 1e-2, (r_served, r_out)


@pytest.mark.parametrize("h,i,i_shared,mode", [(6912, 3712, 3712, 0), (7424, 3456, 0, 1)])
def test_row_tiles_grouped_by_weight_size(h, i, i_shared, mode):
    """Under 32 gate/up column blocks but 98 MiB of gate/up weights a row tile (session 53's
    drawn shapes): the layer groups its row tiles (tiles.L2_SPILL_MIB), with several row tiles
    per expert so a group spans more than one, and matches float32."""
    ep, rank, dispatch, combine = MODES[mode]
    shape = dict(h=h, i=i, i_shared=i_shared, e=2 * ep, n=640, k=2)
    r_out, r_served, layer, _ = run_case(ep, rank, "uniform", dispatch, combine, 512, shape=shape)
    assert layer.cfg.group_m == 8 and layer.Ip // layer.cfg.bn_gu < 32
    assert r_served <= 1e-2 and r_out <= 1e-2, (r_served, r_out)


@pytest.mark.parametrize("i_shared", [0, 768])
def test_no_shared_expert_runs_no_shared_tiles(i_shared):
    """A model without a shared expert runs no shared-expert tiles (until 2026-12-01 the forward
    walked a zero one over the home tokens): its shared row-tile counters stay 0 and the output
    matches float32; with a shared expert every shared row tile counts its gate/up blocks."""
    shape = dict(h=1536, i=768, i_shared=i_shared, e=16, n=300, k=4)
    r_out, r_served, layer, _ = run_case(8, 3, "zipf:1.2", "pull", "push", 256, shape=shape)
    assert r_served <= 1e-2 and r_out <= 1e-2, (r_served, r_out)
    ns_tiles = -(-layer.ns // layer.cfg.block_m)
    sh = layer.sync[layer.off["sh"]:layer.off["sh"] + ns_tiles].cpu()
    want = 0 if i_shared == 0 else layer.Ip // layer.cfg.bn_gu
    assert sh.tolist() == [want] * ns_tiles


@pytest.mark.parametrize("h,i,mode", [(1536, 512, 0), (2560, 1536, 1), (3584, 768, 2),
                                      (6400, 1024, 3), (768, 384, 1), (2880, 2880, 0)])
def test_hidden_sizes_not_multiple_of_1024(h, i, mode):
    ep, rank, dispatch, combine = MODES[mode]
    shape = dict(h=h, i=i, e=2 * ep, n=160, k=4)
    r_out, r_served, _, _ = run_case(ep, rank, "uniform", dispatch, combine, 256, shape=shape)
    assert r_served <= 1e-2 and r_out <= 1e-2, (r_served, r_out)


@pytest.mark.parametrize("ep,rank,routing,combine,h", [(8, 2, "zipf:1.2", "push", 2880),
                                                       (8, None, "uniform", "pull", 2048),
                                                       (4, 1, "hot:0.2", "push", 1536)])
def test_push_lanes_by_runs_match_reference(ep, rank, routing, combine, h):
    """The push lanes copy their pair's run of each tile (session 41; before, each lane scanned
    every chunk of the minibatch: the same bits, logs_s41/s41l), emulated (rank r) and the
    senders' (rank None: every rank in one launch): every row lands, at several tiles per
    minibatch, skewed routing and H not a multiple of 1,024."""
    shape = dict(h=h, i=768, e=4 * ep, n=160, k=4)
    r_out, r_served, layer, (x, ids, wts) = run_case(ep, rank, routing, "push", combine, 256,
                                                      shape=shape)
    assert r_served <= 1e-2 and r_out <= 1e-2, (r_served, r_out)
    # the same bits on a second pass, where this launch writes: the combine slots of the routes
    # it serves and its shared rows (an emulated rank never writes its absent peers' slots)
    flat = ids.reshape(-1)
    served = flat >= 0 if rank is None else (flat // (shape["e"] // ep)) == rank
    first = (layer.comb[served].clone(), layer.sh_out.clone())
    layer.forward(x, ids, wts)
    torch.cuda.synchronize()
    assert torch.equal(layer.comb[served], first[0]) and torch.equal(layer.sh_out, first[1])


@pytest.mark.parametrize("ep,rank,routing,dispatch,combine,e", [
    (8, 3, "zipf:1.2", "push", "pull", 8),    # one expert a rank: a minibatch is a slice of sources
    (8, None, "uniform", "push", "push", 16),  # every rank in one launch (the emulated lanes)
    (4, 1, "hot:0.2", "pull", "push", 8),
    (4, None, "zipf:1.2", "pull", "pull", 4)])
def test_rotated_sources_match_reference_and_the_bits_of_rank_order(ep, rank, routing, dispatch,
                                                                     combine, e):
    """KernelConfig.source_order='rotated' (each rank's sources of an expert start after it;
    docs/sim-study.md "N") only reorders the rows inside an expert: the output matches the float32
    reference and the bits of rank order, with the push lanes finding each sender's run of a
    tile in the rotated order; several minibatches and tiles, H not a multiple of 1,024."""
    shape = dict(h=2560, i=768, e=e, n=192, k=4)
    r_out, r_served, layer, (x, ids, wts) = run_case(ep, rank, routing, dispatch, combine, 256,
                                                      shape=shape, source_order="rotated")
    assert r_served <= 1e-2 and r_out <= 1e-2, (r_served, r_out)
    rotated = output_and_served_slots(layer, x, ids, wts, rank)
    _, _, by_rank, _ = run_case(ep, rank, routing, dispatch, combine, 256, shape=shape)
    ranked = output_and_served_slots(by_rank, x, ids, wts, rank)
    torch.cuda.synchronize()
    assert torch.equal(rotated[0], ranked[0]) and torch.equal(rotated[1], ranked[1])


@pytest.mark.parametrize("dispatch,combine", [("push", "push"), ("pull", "pull")])
def test_local_group_rotated_sources_match_reference(dispatch, combine):
    """Across ranks (P launches, the senders' push lanes: their run of each receiver's tile in
    the receiver's rotated order) with one expert a rank."""
    errs, _, _ = run_local_group(4, dispatch, combine, shape=dict(e=4), minibatch=256, passes=2,
                                 source_order="rotated")
    assert max(errs) <= 1e-2, errs


@pytest.mark.parametrize("ep,rank,dispatch,combine", [
    (4, 0, "pull", "push"), (4, 0, "push", "push"), (8, 2, "push", "pull"),
    (4, None, "push", "push")])             # every rank in one launch: the senders' lanes
def test_trace_stamps_a_pass_without_changing_its_bits(ep, rank, dispatch, combine):
    """KernelConfig.trace (session 62): the traced pass matches float32 and the untraced pass's
    bits, and its stamps are in order: every minibatch's rows in before the comm programs end,
    the compute programs' loops inside the pass, and every work item run exactly once."""
    from mok_kernels.trace import SLOTS, TRACE_COLUMNS, summarize

    shape = dict(h=2560, i=768, e=16, n=192, k=4)
    r_out, r_served, layer, (x, ids, wts) = run_case(ep, rank, "zipf:1.2", dispatch, combine, 256,
                                                      shape=shape, trace=True)
    assert r_served <= 1e-2 and r_out <= 1e-2, (r_served, r_out)
    traced = output_and_served_slots(layer, x, ids, wts, rank)
    t = layer.last_trace.cpu()
    sched, comm = layer.last_schedule, layer.cfg.comm_sms
    nmb = int(sched.num_mb.max())
    programs = t.shape[0] // layer.vranks
    rank0 = t[:programs]
    s = summarize(rank0, comm, int(sched.num_mb.reshape(-1)[0]))
    assert 0 <= min(s["minibatch_ready_us"]) and max(s["minibatch_ready_us"]) <= s["comm_end_us"]
    assert s["compute_start_us"] <= s["compute_end_us"] <= s["pass_us"]
    assert (t[:, SLOTS["start"]] > 0).all() and t.shape[1] == TRACE_COLUMNS + layer.mb_max
    assert nmb >= 2
    cfg = layer.cfg                        # every work item of each rank ran exactly once
    nb_dn = -(-layer.H // cfg.bn_dn)
    per_tile = layer.Ip // cfg.bn_gu + -(-nb_dn // cfg.dn_blocks) * cfg.split_dn
    ns_tiles = -(-layer.ns // cfg.block_m) if layer.has_shared else 0
    for v in range(layer.vranks):
        ran = int(t[v * programs:(v + 1) * programs, SLOTS["items"]].sum())
        assert ran == (ns_tiles + int(sched.num_tiles.reshape(-1)[v])) * per_tile
    _, _, plain, _ = run_case(ep, rank, "zipf:1.2", dispatch, combine, 256, shape=shape)
    untraced = output_and_served_slots(plain, x, ids, wts, rank)
    torch.cuda.synchronize()
    assert torch.equal(traced[0], untraced[0]) and torch.equal(traced[1], untraced[1])


@pytest.mark.parametrize("ep,rank,routing,combine,e,precision", [
    (4, 0, "hot:0.1", "push", 16, "bf16"),     # seed 28's regret shape, top-4: short runs
    (8, 3, "zipf:1.2", "pull", 8, "bf16"),     # one expert a rank
    (8, None, "uniform", "push", 16, "bf16"),  # every rank in one launch: the senders' lanes
    (4, 1, "uniform", "push", 16, "fp8"),      # quantizing copies
    (4, None, "hot:0.2", "pull", 8, "fp8"),
    (4, 2, "uniform", "push", 4, "bf16-rotated"),   # one expert a rank, sources after the rank
    (8, 5, "hot:0.1", "push", 64, "bf16-bm64"),     # many short runs, 64-row tiles (TT 32)
    (4, 0, "hot:0.1", "push", 16, "bf16-wide")])    # 32 comm SMs (8 lanes a sender), more
def test_push_lanes_shares_match_reference_and_the_bits_of_tiles(ep, rank, routing, combine, e,
                                                                 precision):   # tiles than TT
    """KernelConfig.push_loop='shares' (each sender's lanes copy every nsub-th chunk of its runs
    over all the minibatch's tiles, session 63) copies the same rows into the same ring slots as
    'tiles': the output matches the float32 reference and the bits of 'tiles', over several
    minibatches, tiles and lanes, H not a multiple of 1,024 (BF16)."""
    h = 2048 if precision == "fp8" else 2560
    wide = precision == "bf16-wide"        # 4,096 rows in minibatches of 2,560: ~24 tiles each
    shape = dict(h=h, i=768, e=e, n=1024 if wide else 192, k=4)
    run = dict(minibatch=2560 if wide else 256, comm=32 if wide else 8)
    tiles = {"fp8": dict(precision="fp8"), "bf16-rotated": dict(source_order="rotated"),
             "bf16-bm64": dict(block_m=64)}.get(precision, {})
    r_out, r_served, layer, (x, ids, wts) = run_case(ep, rank, routing, "push", combine,
                                                      shape=shape, push_loop="shares", **run,
                                                      **tiles)
    if precision != "fp8":     # the FP8 pass's own bound is test_fp8_gpu's; bits compare here
        assert r_served <= 1e-2 and r_out <= 1e-2, (r_served, r_out)
    sched = layer.last_schedule
    if wide:                   # minibatches of more tiles than a lane loads at once (TT 16)
        assert int((sched.mb_tile[1:] - sched.mb_tile[:-1]).max()) > 16
    shares = output_and_served_slots(layer, x, ids, wts, rank)
    _, _, by_tiles, _ = run_case(ep, rank, routing, "push", combine, shape=shape, **run, **tiles)
    tiled = output_and_served_slots(by_tiles, x, ids, wts, rank)
    torch.cuda.synchronize()
    assert torch.equal(shares[0], tiled[0]) and torch.equal(shares[1], tiled[1])


def test_local_group_push_lanes_shares_match_reference():
    """Across ranks (P launches: the senders' lanes read each receiver's schedule)."""
    errs, _, _ = run_local_group(4, "push", "push", shape=dict(e=8, h=2560, i=768, n=192),
                                 minibatch=256, passes=2, push_loop="shares")
    assert max(errs) <= 1e-2, errs


def test_pointer_weight_tiles_at_gpt_oss_shape():
    # non-TMA weight loads: the masked last down block of H = 2880 and the padded I
    shape = dict(h=2880, i=2880, e=8, n=160, k=4)
    r_out, r_served, _, _ = run_case(4, None, "uniform", "pull", "push", 256, shape=shape, tma=False)
    assert r_served <= 1e-2 and r_out <= 1e-2, (r_served, r_out)


def test_torch_grouped_matches_reference():
    from mok_kernels.baselines import LocalExperts, torch_grouped_rank
    ep, rank = 4, 2
    w, wf, x, ids, wts = setup(ep, "zipf:1.2", 3)
    home = torch.zeros(ep * N, H, device="cuda")
    for r in range(ep):
        ex = LocalExperts(w, r * E // ep, (r + 1) * E // ep, "cuda", torch.bfloat16)
        part, sh = torch_grouped_rank(x, ids, wts, ex, r, N)
        home += part
        if r == rank:
            shared = sh
    got = home[rank * N:(rank + 1) * N] + shared.float()
    want = ref.moe_reference(x[rank * N:(rank + 1) * N].float(), ids[rank * N:(rank + 1) * N],
                             wts[rank * N:(rank + 1) * N], wf)
    assert rel(got, want) <= 1e-2


SCHEDULE_CASES = [   # (ep, rank, routing, capacity multiplier, minibatch, block_m, E, N, k)
    (16, 3, "uniform", 0.5, 300, 128, 64, 512, 8),
    (8, None, "zipf:1.2", 0.5, 1000, 128, 64, 512, 8),
    (4, 0, "onehot", 0.2, 256, 64, 64, 512, 8), (1, 0, "hot:0.1", 1.0, 4096, 128, 64, 512, 8),
    (32, 7, "uniform", 1.0, 512, 128, 384, 8192, 8),
    (16, 0, "hot:0.1", 1.0, 2048, 64, 512, 4096, 8),
    (32, None, "zipf:1.2", 0.25, 128, 128, 256, 1024, 8),
    (8, 2, "zipf:1.2", 0.05, 128, 64, 32, 700, 4),   # overflows: rows past the capacity dropped
    (64, 63, "uniform", 1.0, 64, 128, 256, 64, 1)]


@pytest.mark.parametrize("rotated", [False, True])
@pytest.mark.parametrize("ep,rank,routing,mult,mb,bm,e,n,k", SCHEDULE_CASES)
def test_fused_schedule_equals_tensor_ops(ep, rank, routing, mult, mb, bm, e, n, k, rotated):
    """The Triton schedule builder gives the tensor ops' arrays bit for bit, eagerly and
    replayed from a CUDA graph on fresh ids; rotated too (KernelConfig.source_order: one rank)."""
    from mok_kernels.bench import capture_graph
    from mok_kernels.schedule import build_schedule
    if rotated and rank is None:
        pytest.skip("rotated needs one receiving rank (the layer builds one schedule a rank)")
    kw = dict(ep=ep, num_experts=e, rank=rank, capacity_multiplier=mult, minibatch=mb, block_m=bm,
              rotated=rotated)
    ids, _ = make_routing(ep * n, e, k, routing, 5, device="cuda")
    out = {}
    step = capture_graph(lambda: out.update(s=build_schedule(ids, use_triton=True, **kw)))
    for seed in (5, 6, 7):
        ids.copy_(make_routing(ep * n, e, k, routing, seed, device="cuda")[0])
        want = build_schedule(ids, use_triton=False, **kw)
        for got in (build_schedule(ids, use_triton=True, **kw), None):
            if got is None:
                step()
                got = out["s"]
            torch.cuda.synchronize()
            for f in dataclasses.fields(want):
                x, y = getattr(want, f.name), getattr(got, f.name)
                if isinstance(x, torch.Tensor):
                    assert torch.equal(x.long(), y.long()), (seed, f.name)


# ---- group mode: P separate launches (one per rank, own stream, own arena) on one GPU run the
# cross-GPU protocol (epoch flags, routing exchange, remote rings, signals, pull/push) unchanged.

def run_local_group(ep, dispatch, combine, shape=None, routing="zipf:1.2", passes=2, seed=0,
                    minibatch=300, macro=131072, **kw):
    from mok_kernels.megakernel import group_forward
    from mok_kernels.peers import LocalGroup
    sh = dict(e=E, h=H, i=I, n=N, k=K) | (shape or {})
    n, k = sh["n"], sh["k"]
    group = LocalGroup(ep)
    cfg = KernelConfig(dispatch=dispatch, combine=combine, minibatch=minibatch, comm_sms=8,
                       capacity=1.0, macrobatch=macro, on_error="raise", **kw)
    w = None
    errs, outs = [], []
    for p_i in range(passes):                  # fresh tokens and routing every pass (epochs)
        w_, wf, x, ids, wts = setup(ep, routing, seed + p_i, **sh)
        if w is None:
            w = w_
            layers = [MoKLayer(w, ep, n, k, r, cfg, group=group) for r in range(ep)]
        else:                                  # same weights every pass
            wf = w.to(torch.float32)
        sl = [slice(r * n, (r + 1) * n) for r in range(ep)]
        got = group_forward(layers, [x[s] for s in sl], [ids[s] for s in sl], [wts[s] for s in sl])
        torch.cuda.synchronize()
        for r in range(ep):
            want = ref.moe_reference(x[sl[r]].float(), ids[sl[r]], wts[sl[r]], wf)
            errs.append(rel(got[r], want))
        outs.append([o.clone() for o in got])
    return errs, layers, outs


def test_local_group_trace_stamps_every_rank():
    """KernelConfig.trace across ranks (P launches, group mode's code, the senders' push lanes):
    float32 still, and every rank's stamps in order."""
    from mok_kernels.trace import summarize

    errs, layers, _ = run_local_group(4, "push", "push", shape=dict(e=8, h=2560, i=768, n=192),
                                      minibatch=256, passes=2, trace=True)
    assert max(errs) <= 1e-2, errs
    for layer in layers:
        s = summarize(layer.last_trace, layer.cfg.comm_sms, int(layer.last_schedule.num_mb))
        assert s["compute_start_us"] <= s["compute_end_us"] <= s["pass_us"]
        assert max(s["minibatch_ready_us"]) <= s["comm_end_us"]


@pytest.mark.parametrize("ep,dispatch,combine", [(2, "pull", "push"), (2, "push", "pull"),
                                                 (2, "push", "push"), (2, "pull", "pull"),
                                                 (4, "push", "push"), (4, "pull", "pull")])
def test_local_group_matches_reference(ep, dispatch, combine):
    errs, _, _ = run_local_group(ep, dispatch, combine, passes=3)
    assert max(errs) <= 1e-2, errs


@pytest.mark.parametrize("dispatch,combine", [("push", "push"), ("pull", "pull")])
def test_local_group_production_shape(dispatch, combine):
    # H = 2880 (gpt-oss): masked copy chunk and down block, padded I; >= 2 of every block
    shape = dict(h=2880, i=2880, e=8, n=160, k=4)
    errs, _, _ = run_local_group(2, dispatch, combine, shape=shape, passes=2, minibatch=256)
    assert max(errs) <= 1e-2, errs


def test_local_group_ring_back_pressure_across_ranks():
    # ring of minibatch + block_m rows: senders wait on the receiver's gate/up counters remotely
    errs, _, _ = run_local_group(2, "push", "push", routing="uniform", minibatch=256, macro=1,
                                 passes=2)
    assert max(errs) <= 1e-2, errs


def test_local_group_bits_identical_over_passes():
    errs, layers, outs = run_local_group(2, "push", "pull", passes=1)
    from mok_kernels.megakernel import group_forward
    w, wf, x, ids, wts = setup(2, "zipf:1.2", 0)
    sl = [slice(0, N), slice(N, 2 * N)]
    for _ in range(5):
        got = group_forward(layers, [x[s] for s in sl], [ids[s] for s in sl], [wts[s] for s in sl])
        assert all(torch.equal(g, o) for g, o in zip(got, outs[0]))


@pytest.mark.parametrize("dispatch,combine", [("push", "pull"), ("pull", "push")])
def test_local_group_list_lag_matches_reference_and_the_bits_of_lag_one(dispatch, combine):
    """Group mode (each rank its own launch, the cross-GPU protocol) with the work list's lag:
    the same bits as lag 1, at a shape with several minibatches per rank."""
    shape = dict(h=2880, i=448, e=8, n=400, k=4)
    _, _, one = run_local_group(2, dispatch, combine, shape=shape, passes=1, minibatch=256)
    for lag in (2, 3):
        errs, _, outs = run_local_group(2, dispatch, combine, shape=shape, passes=1,
                                        minibatch=256, list_lag=lag)
        assert max(errs) <= 1e-2, (lag, errs)
        assert all(torch.equal(a, b) for a, b in zip(outs[0], one[0])), lag


def test_local_group_missing_rank_raises():
    """Rank 1 never runs: rank 0's pass-entry exchange gives up and names rank 1."""
    from mok_kernels.peers import LocalGroup
    group = LocalGroup(2)
    w, wf, x, ids, wts = setup(2, "uniform", 0)
    cfg = KernelConfig(capacity=1.0, comm_sms=8, minibatch=256, max_spin=20000, on_error="raise",
                       **OLD_DEFAULTS)
    layer0 = MoKLayer(w, 2, N, K, 0, cfg, group=group)
    MoKLayer(w, 2, N, K, 1, cfg, group=group)     # allocates rank 1's arena, never launched
    layer0.forward(x[:N], ids[:N], wts[:N])
    torch.cuda.synchronize()
    assert torch.isnan(layer0.out.float()).all()
    with pytest.raises(MegakernelStallError, match="rank 1"):
        layer0.check()


def test_local_group_overflow_on_one_rank_fails_every_rank():
    """One-hot routing sends every route's top-1 to rank 0, which drops rows; rank 1 drops none.
    The rows rank 0 drops are rank 1's tokens too, so rank 1's output must not be usable either:
    NaN, and the pass raises (until 2026-12-02 rank 1 returned stale combine slots)."""
    from mok_kernels.megakernel import group_forward
    from mok_kernels.peers import LocalGroup
    group = LocalGroup(2)
    w, wf, x, ids, wts = setup(2, "onehot", 0)
    cfg = KernelConfig(capacity=0.5, comm_sms=8, minibatch=256, on_error="raise",
                       **OLD_DEFAULTS)
    layers = [MoKLayer(w, 2, N, K, r, cfg, group=group) for r in range(2)]
    sl = [slice(0, N), slice(N, 2 * N)]
    with pytest.raises(CapacityOverflowError, match="overflow"):
        group_forward(layers, [x[s] for s in sl], [ids[s] for s in sl], [wts[s] for s in sl])
    torch.cuda.synchronize()
    assert int(layers[0].last_schedule.overflow) > 0
    for layer in layers:
        assert torch.isnan(layer.out.float()).all()
        layer.check()      # group_forward checked every rank: the failed pass's words are zeroed


def test_bench_on_real_gpus(tmp_path):
    """`mok bench --gpus N` on every GPU of the host: each configuration checked and recorded."""
    import subprocess
    import sys
    from mok_model.records import read_records
    gpus = torch.cuda.device_count()
    out = tmp_path / "runs.jsonl"
    cmd = [sys.executable, "-m", "mok_kernels.bench", "--gpus", str(gpus), "--model",
           "qwen3-30b-a3b", "--tokens", "256", "--dispatch", "pull,push", "--combine", "push,pull",
           "--minibatch", "512", "--comm-sms", "16", "--iters", "3", "--warmup", "1",
           "--out", str(out)]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    print(res.stdout, res.stderr[-3000:])
    assert res.returncode == 0, res.stderr[-3000:]
    recs = read_records([out])
    assert sorted(r["system"] for r in recs) == sorted(["mok"] * 4 + ["nccl-torch", "graph-a2a",
                                                                      "gemm-only"])
    for r in recs:
        assert r["hardware"]["gpus"] == gpus and r["hardware"]["fabric"] == "nvlink4"
        assert r["emulated_peers"] is False and r["ep"] == gpus
        assert len(r["rank_ms"]) == gpus and max(r["rel_err_vs_fp32"]) <= 2e-2


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs 2 GPUs")
def test_auto_layer_after_swept_layers_on_real_gpus(tmp_path):
    """The model's pick built after swept layers in one process (the tuner runs inside the new
    layer's construction, then a new symmetric arena): stalled on 2 H200s before SymmetricArena
    synchronized the group first (NOTES.md, grid E)."""
    import subprocess
    import sys
    from mok_model.records import read_records
    out = tmp_path / "runs.jsonl"
    cmd = [sys.executable, "-m", "mok_kernels.bench", "--gpus", "2", "--model", "deepseek-v3",
           "--tokens", "2048", "--dispatch", "pull", "--combine", "push", "--minibatch", "4096",
           "--comm-sms", "32", "--systems", "mok", "--auto", "--iters", "3", "--warmup", "1",
           "--timeout", "120", "--out", str(out)]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    print(res.stdout, res.stderr[-3000:])
    assert res.returncode == 0, res.stderr[-3000:]
    recs = read_records([out])
    assert len(recs) == 2 and sum("auto" in r for r in recs) == 1
    assert all(max(r["rel_err_vs_fp32"]) <= 2e-2 for r in recs)


def test_bench_refuses_an_overflowing_capacity_before_launch_and_goes_on(tmp_path, capsys):
    """A routing that sends the emulated rank more rows than the schedule holds (onehot at EP 16:
    every token's expert 0 on rank 0, ~11,400 rows against capacity 0.125's 8,192) fails that
    setting with one line naming the rows, before any launch: a trapped launch would kill the
    process's CUDA context and every later workload (session 43: `mok bench --auto` with hot
    routing at EP 16 lost the rest of its run). The model's pick holds it (its capacity covers
    one hot expert since session 43: 0.25 here), and the next workload (uniform) is timed and
    recorded in the same process."""
    from mok_kernels.bench import cli
    from mok_model.records import read_records
    out = tmp_path / "runs.jsonl"
    rc = cli(["--model", "qwen3-30b-a3b", "--ep", "16", "--tokens", "512", "--routing",
              "onehot,uniform", "--systems", "mok", "--dispatch", "pull", "--combine", "push",
              "--minibatch", "4096", "--comm-sms", "32", "--capacity", "0.125", "--auto",
              "--iters", "3", "--warmup", "1", "--out", str(out)])
    log = capsys.readouterr()
    text = log.out + log.err
    assert rc == 0, text[-3000:]
    assert text.count("routed rows reach rank 0") == 1, text[-3000:]   # the swept setting
    recs = read_records([out])
    assert [(r["routing"]["kind"], "auto" in r) for r in recs] == [
        ("onehot", True), ("uniform", False), ("uniform", True)], recs
    assert recs[0]["config"]["capacity"] == 0.25


def _bench_mok_and_gemm_phases(tmp_path, model: str, ep: int, tokens: int, iters: int,
                               warmup: int) -> dict:
    """`mok bench --systems mok,mok-gemm` at the published default knobs (capacity 1.0): its
    records by system."""
    from mok_kernels.bench import cli
    from mok_model.records import read_records
    out = tmp_path / "runs.jsonl"
    rc = cli(["--model", model, "--ep", str(ep), "--tokens", str(tokens), "--systems",
              "mok,mok-gemm", "--dispatch", "pull", "--combine", "push", "--minibatch", "4096",
              "--comm-sms", "32", "--capacity", "1.0", "--iters", str(iters), "--warmup",
              str(warmup), "--out", str(out)])
    assert rc == 0
    return {r["system"]: r for r in read_records([out])}


def test_bench_gemm_phases_record(tmp_path):
    """`mok bench --systems mok,mok-gemm`: the kernel's GEMM phases alone are recorded as a
    diagnostic with the knobs they ran, and take no longer than the whole pass (copies skipped)."""
    from mok_kernels.bench import GEMM_PHASE_KNOBS
    recs = _bench_mok_and_gemm_phases(tmp_path, "qwen3-30b-a3b", 16, 1024, 5, 2)
    g, m = recs["mok-gemm"], recs["mok"]
    assert g["config"] == GEMM_PHASE_KNOBS and "DIAGNOSTIC" in g["note"] and g["tiles"]
    assert 0 < g["latency_ms"]["median"] <= 1.05 * m["latency_ms"]["median"]


@pytest.mark.parametrize("dispatch,combine", [("pull", "push"), ("pull", "pull"),
                                              ("push", "push"), ("push", "pull")])
def test_skip_gemm_diagnostic_runs_every_copy_and_writes_zeros(dispatch, combine):
    """skip_gemm (the copies alone, benchmarks/copy_beside_gemm.py): every rank's pass completes
    with no stall, and every output row is exactly zero: each combine slot was written (served
    slots are poisoned with NaN first) by items that ran no K loop."""
    r_out, r_served, _, _ = run_case(4, None, "zipf:1.2", dispatch, combine, 256, skip_gemm=True)
    assert r_out == 1.0 and r_served == 1.0, (r_out, r_served)   # rel(0, want) is exactly 1


def test_bench_records_name_the_split_the_layer_ran(tmp_path):
    """A forward record's tiles say the down split the layer ran (mixtral-8x7b at EP 8 with 64
    tokens: the shape's 4, in the MoK and the GEMM-phase record alike)."""
    recs = _bench_mok_and_gemm_phases(tmp_path, "mixtral-8x7b", 8, 64, 3, 1)
    assert recs["mok"]["tiles"]["split_dn"] == 4 and recs["mok-gemm"]["tiles"]["split_dn"] == 4


@pytest.mark.parametrize("ep,rank,routing,dispatch,combine,gm", [
    (4, 1, "uniform", "pull", "push", 8), (8, None, "zipf:1.2", "push", "pull", 3),
    (2, 0, "hot:0.2", "pull", "pull", 64)])
def test_grouped_gate_up_order_matches_reference_and_bits(ep, rank, routing, dispatch, combine, gm):
    """group_m > 1 takes gate/up tiles column-major in groups of row tiles (the last group
    partial): correct against float32, and the same bits as row tile by row tile."""
    # 8 gate/up column blocks, ~14 row tiles; hot routing needs top_k <= E - 1
    shape = dict(h=1536, i=1024, e=max(2 * ep, 8), n=900, k=4)
    outs = []
    for g in (1, gm):
        r_out, r_served, layer, (x, ids, wts) = run_case(ep, rank, routing, dispatch, combine, 1024,
                                                         shape=shape, group_m=g)
        assert r_served <= 1e-2 and r_out <= 1e-2, (g, r_served, r_out)
        outs.append(layer.forward(x, ids, wts).clone())
    assert torch.equal(outs[0], outs[1])



@pytest.mark.parametrize("ep,rank,routing,dispatch,combine,macro,shape", [
    (8, 3, "zipf:1.2", "pull", "push", 131072, dict(h=1536, i=512, e=16, n=200, k=4)),
    (4, None, "uniform", "push", "pull", 131072, dict(h=2880, i=2880, e=8, n=160, k=4)),
    (8, 5, "hot:0.1", "push", "push", 1024, dict(h=2560, i=1536, e=16, n=150, k=4, i_shared=0)),
    (4, None, "onehot", "pull", "pull", 131072, dict(h=1024, i=704, e=8, n=190, k=2)),
    (2, 1, "uniform", "pull", "push", 700, dict(h=4096, i=3584, e=2, n=333, k=1)),
    (1, 0, "zipf:1.2", "push", "pull", 131072, dict(h=768, i=96, e=5, n=77, k=3))])
def test_tma_activation_tiles_match_reference_and_bits(ep, rank, routing, dispatch, combine, macro,
                                                       shape):
    """tma_a: h rows (down) and, when the ring never wraps, ring rows (gate/up) through TMA.
    Rows past a tile's own are loaded too (other rows, or zeros past the buffer) and masked at the
    stores: correct against float32 and the same bits as pointer loads, in both modes."""
    outs = []
    for tma_a in (False, True):
        r_out, r_served, layer, (x, ids, wts) = run_case(ep, rank, routing, dispatch, combine, 256,
                                                         macro=macro, shape=shape, tma_a=tma_a)
        assert r_served <= 1e-2 and r_out <= 1e-2, (tma_a, r_served, r_out)
        if tma_a:   # the ring holds every routed row (mode 2) unless it was made smaller
            assert layer.tma_a_mode() == (2 if layer.ring_rows >= layer.capacity else 1)
        outs.append(output_and_served_slots(layer, x, ids, wts, rank))
    # the combine slots this launch served (the others hold a per-layer random fill)
    assert torch.equal(outs[0][0], outs[1][0]) and torch.equal(outs[0][1], outs[1][1])


def test_split_down_chosen_from_the_shape():
    """KernelConfig(split_dn=None): the layer splits the down GEMM's K loop where a rank's down
    phase has few items and a long K (mixtral-8x7b at EP 8 with 64 tokens: 4 slices), and not at
    256 tokens (tiles.py forward_split_dn); the split it chose is correct."""
    shape = dict(h=4096, i=14336, e=8, n=64, k=2)
    r_out, r_served, layer, _ = run_case(8, 0, "uniform", "pull", "push", 256, shape=shape)
    assert layer.cfg.split_dn == 4 and layer.split_ws is not None
    assert r_served <= 1e-2 and r_out <= 1e-2, (r_served, r_out)
    r_out, r_served, wide, _ = run_case(8, 0, "uniform", "pull", "push", 256,
                                        shape=dict(shape, n=256))
    assert wide.cfg.split_dn == 1 and wide.split_ws is None
    assert r_served <= 1e-2 and r_out <= 1e-2, (r_served, r_out)


@pytest.mark.parametrize("ep,rank,routing,dispatch,combine,split,extra,shape", [
    (8, 0, "uniform", "pull", "push", 8, {}, dict(h=4096, i=14336, e=8, n=64, k=2)),   # mixtral
    (8, 3, "zipf:1.2", "pull", "push", 4, {}, dict(h=1536, i=2880, e=16, n=100, k=4)),
    (4, None, "uniform", "push", "pull", 2, {}, dict(h=2880, i=2880, e=8, n=90, k=4)),
    (8, 5, "hot:0.1", "push", "push", 16, {}, dict(h=2560, i=1536, e=16, n=70, k=4,
                                                   i_shared=0)),
    (4, None, "onehot", "pull", "pull", 4, {"tma_a": True}, dict(h=1024, i=704, e=8, n=60, k=2)),
    (2, 1, "uniform", "pull", "push", 8, {"tma_a": True}, dict(h=768, i=3584, e=2, n=50, k=1)),
    (1, 0, "zipf:1.2", "push", "pull", 2, {"bn_dn": 128}, dict(h=3584, i=96, e=5, n=77, k=3))])
def test_split_down_matches_reference_and_repeats_bits(ep, rank, routing, dispatch, combine, split,
                                                       extra, shape):
    """split_dn: each down block's K loop in `split` slices whose fp32 partial tiles the item
    completing the block sums in slice order. Correct against float32 (shared and routed rows,
    every dispatch x combine, several column blocks, H not a multiple of 1024, slices past I's
    K steps), and the same bits on every run whichever slice finishes last."""
    r_out, r_served, layer, (x, ids, wts) = run_case(ep, rank, routing, dispatch, combine, 256,
                                                     shape=shape, split_dn=split, **extra)
    assert r_served <= 1e-2 and r_out <= 1e-2, (r_served, r_out)
    assert layer.split_ws is not None
    outs = []
    for _ in range(3):
        outs.append(output_and_served_slots(layer, x, ids, wts, rank))
    assert all(torch.equal(o[0], outs[0][0]) and torch.equal(o[1], outs[0][1]) for o in outs)


@pytest.mark.parametrize("ep,rank,routing,dispatch,combine,dn,extra,shape", [
    (8, 3, "zipf:1.2", "pull", "push", 4, {}, dict(h=1536, i=512, e=16, n=200, k=4)),
    (4, None, "uniform", "push", "pull", 5, {}, dict(h=2880, i=2880, e=8, n=160, k=4)),
    (8, 5, "hot:0.1", "push", "push", 3, {}, dict(h=2560, i=1536, e=16, n=150, k=4, i_shared=0)),
    (4, None, "onehot", "pull", "pull", 2, {}, dict(h=1024, i=704, e=8, n=190, k=2)),
    (2, 1, "uniform", "pull", "push", 16, {}, dict(h=4096, i=3584, e=2, n=333, k=1)),
    (1, 0, "zipf:1.2", "push", "pull", 2, {}, dict(h=768, i=96, e=5, n=77, k=3)),
    (8, 3, "zipf:1.2", "pull", "push", 3, {"tma_a": True}, dict(h=1536, i=512, e=16, n=200,
                                                                k=4))],
    ids=[f"blocks{c}" for c in range(7)])
def test_flattened_blocks_match_reference_and_bits(ep, rank, routing, dispatch, combine, dn, extra,
                                                   shape):
    """dn_blocks: a down item's column blocks in one flattened K loop (the last item of a row
    tile partial, the last block masked past H): correct against float32 and the same bits as
    one block an item."""
    outs = []
    for d in (1, dn):
        r_out, r_served, layer, (x, ids, wts) = run_case(ep, rank, routing, dispatch, combine, 256,
                                                         shape=shape, split_dn=1, dn_blocks=d,
                                                         **extra)
        assert r_served <= 1e-2 and r_out <= 1e-2, (d, r_served, r_out)
        assert layer.cfg.dn_blocks == d
        outs.append(output_and_served_slots(layer, x, ids, wts, rank))
    assert torch.equal(outs[0][0], outs[1][0]) and torch.equal(outs[0][1], outs[1][1])


@pytest.mark.parametrize("ep,rank,dispatch,combine,comm", [(8, 2, "pull", "push", 16),
                                                           (8, None, "push", "push", 4)])
def test_default_down_blocks_at_a_production_shape(ep, rank, dispatch, combine, comm):
    """qwen3-30b-a3b's expert (H 2,048, I 768) with enough row tiles that the layer picks several
    down blocks an item by itself (tiles.forward_dn_blocks): correct against float32, and the
    same bits as one block an item."""
    from mok_kernels.tiles import forward_dn_blocks
    shape = dict(h=2048, i=768, e=16, n=1536, k=8, i_shared=0)
    outs = []
    for d in (None, 1):
        r_out, r_served, layer, (x, ids, wts) = run_case(ep, rank, "uniform", dispatch, combine,
                                                         4096, comm=comm, shape=shape, dn_blocks=d)
        assert r_served <= 1e-2 and r_out <= 1e-2, (d, r_served, r_out)
        if d is None:
            sms = torch.cuda.get_device_properties(0).multi_processor_count // layer.vranks
            want = forward_dn_blocks(1536, 8, 16, ep, 2048, 768, sms)
            assert layer.cfg.dn_blocks == want > 1
        outs.append(output_and_served_slots(layer, x, ids, wts, rank))
    assert torch.equal(outs[0][0], outs[1][0]) and torch.equal(outs[0][1], outs[1][1])
