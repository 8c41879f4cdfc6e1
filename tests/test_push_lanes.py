"""Our kernel's push lanes, in the model (session 63): lane l serves the pair of ranks l % P, so a
minibatch whose rows come from few senders is copied by their lanes alone
(analytic.push_lane_rows, push_lane_chain; push_lanes_bound), and what the "shares" loop's
lanes are charged for their visits (push_visits)."""

import numpy as np
import pytest

from mok_model.analytic import minibatch_sources, push_lane_rows, push_visits
from mok_model.params import load_params
from mok_model.predict import analytic_mok
from mok_model.presets import load_hardware, load_model
from mok_model.scenario import Config, Scenario
from mok_model.sim import simulate

SEED28 = "calibration/drawn_shapes/seed28"


def emulated(model, ep, tokens, routing, seed=28, **kw) -> Scenario:
    return Scenario(load_hardware("h100-1"), load_model(model), ep, tokens, routing=routing,
                    seed=seed, **kw)


def rows_by_source(scn, mb, tm=128, rotated=False):
    """(M, P) rows of GPU 0's minibatches by source rank, from minibatch_sources."""
    lo, cnt = minibatch_sources(scn, mb, tm, True, rotated)[0]
    return cnt.sum(axis=1)


def test_lanes_of_a_balanced_minibatch_share_it_evenly():
    """Uniform routing, 16 experts a GPU: every minibatch holds every sender's rows, so the
    busiest lane copies about its 1 / COMM share (COMM >= P: P senders' nsub lanes each)."""
    scn = emulated("qwen3-30b-a3b", 8, 4096, "uniform", seed=0)
    by_src = rows_by_source(scn, 4096)
    (rest, (work,)), = push_lane_rows(scn, 4096, 128, True, False, (32,))
    fair = np.cumsum(by_src.sum(axis=1)) / 32
    assert len(work) == len(by_src) >= 8
    assert np.all(work >= fair - 1e-9) and np.all(work <= 1.25 * fair)
    assert rest[0] == 1.0 and np.all(np.diff(rest) < 0) and rest[-1] > 0


def test_a_minibatch_from_one_sender_waits_for_its_lanes():
    """Seed 28's EP 16 hot shape (measured: minibatch 0 of rank 0 in at ~200 us against pull's
    ~18 us, mok_kernels/logs_s63/dev/s63s/hot.log): expert 0 holds a tenth of all routes, its
    rows in source order, so minibatch 0 is mostly sender 0's and its two lanes (32 comm
    programs, 16 ranks) copy it while the others idle."""
    scn = emulated(f"{SEED28}/syn28-h2816-i384-e64-k7.toml", 16, 2048, "hot:0.1")
    by_src = rows_by_source(scn, 2048)
    assert by_src[0].argmax() == 0 and by_src[0, 0] > 0.6 * by_src[0].sum()
    (_, (work,)), = push_lane_rows(scn, 2048, 128, True, False, (32,))
    assert work[0] == pytest.approx(by_src[0, 0] / 2)          # sender 0's two lanes
    assert work[0] > 8 * by_src[0].sum() / 32
    # the lanes walk the minibatches on their own: by the end the busiest lane holds about its
    # even share of every sender's rows
    assert work[-1] <= 1.2 * by_src.sum() / 32


def test_fewer_comm_programs_than_ranks_serve_their_senders_in_turn():
    """COMM < P: program c copies the rows of the senders c, c + COMM, ... one lane each."""
    scn = emulated("qwen3-30b-a3b", 16, 2048, "uniform", seed=0)
    by_src = rows_by_source(scn, 2048)
    (_, (work,)), = push_lane_rows(scn, 2048, 128, True, False, (6,))
    cum = np.cumsum(by_src, axis=0)
    want = np.stack([cum[:, np.arange(16) % 6 == c].sum(axis=1) for c in range(6)]).max(axis=0)
    np.testing.assert_allclose(work, want)


def test_across_gpus_every_receiver_has_its_lanes():
    """Real GPUs: one (rest, work) per receiver; sender s's nsub lanes for receiver d."""
    scn = Scenario(load_hardware("h200-hgx8"), load_model("qwen3-30b-a3b"), 8, 4096)
    lanes = push_lane_rows(scn, 4096, 128, True, False, (16,))
    assert len(lanes) == 8
    for d, (_, work) in enumerate(lanes):
        lo, cnt = minibatch_sources(scn, 4096, 128, True, False)[d]
        by_src = np.cumsum(cnt.sum(axis=1), axis=0)
        np.testing.assert_allclose(work[0], by_src.max(axis=1) / 2)   # 16 programs, 8 ranks


@pytest.mark.parametrize("engine", ["analytic", "sim"])
def test_both_engines_charge_the_idle_lanes(engine):
    """The EP 16 hot shape measured push 0.725-0.745 ms against pull 0.557 (one H100, s63s):
    with push_lanes_bound on, both engines read push above 0.7 ms, against ~0.55 without it;
    pull does not move."""
    scn = emulated(f"{SEED28}/syn28-h2816-i384-e64-k7.toml", 16, 2048, "hot:0.1", list_lag=1)
    p = load_params(None, "h100-1")
    off = p.with_values(push_lanes_bound=0.0)
    knobs = dict(combine="push", minibatch=2048, comm_sms=32, macrobatch=131072, capacity=1.0)
    run = (lambda c, q: analytic_mok(scn, c, q).latency_ms) if engine == "analytic" else \
        (lambda c, q: simulate(scn, c, "mok", q).latency_ms)
    push, pull = Config(dispatch="push", **knobs), Config(dispatch="pull", **knobs)
    assert p["push_lanes_bound"] == 1.0
    assert run(push, p) > 0.7 and run(push, off) < 0.6
    assert run(pull, p) == run(pull, off)


def test_share_lanes_are_charged_the_tiles_a_runs_lane_visits():
    """The "shares" loop: a lane reads every tile's sources a block at a time, and starts a copy
    chain in about the tiles a "runs" lane visits (every nsub-th in total; all of them where a
    pair has one lane), which is what it is charged; the older "pipe" lanes scan chunks."""
    scn = emulated("qwen3-30b-a3b", 8, 4096, "uniform")
    for loop in ("shares", "runs"):
        s = scn.with_(copy_loop=loop)
        assert push_visits(s, 8, 32, 4096, 40) == 10          # nsub 4: every 4th tile
        assert push_visits(s, 32, 8, 4096, 40) == 4 * 40      # four lanes, one each
    assert push_visits(scn.with_(copy_loop="pipe"), 8, 32, 4096, 40) == 4096 / 16 / 4


@pytest.mark.parametrize("mb,tm,aligned,rotated", [(64, 128, True, False), (300, 64, False, True),
                                                    (2048, 128, True, True)])
def test_source_totals_are_the_cut_summed(mb, tm, aligned, rotated):
    """The lanes' per-source totals (searched in the runs) are the simulator's cut
    (minibatch_sources) summed over experts and minibatches."""
    from mok_model.analytic import _source_totals, source_orders
    scn = emulated("qwen3-30b-a3b", 8, 640, "hot:0.1", seed=3)
    for d in (0, 5):
        lo, cnt = minibatch_sources(scn, mb, tm, aligned, rotated)[d]
        by_rank = np.zeros((len(lo), 8))
        by_rank[:, source_orders(8, rotated)[d]] = cnt.sum(axis=1)
        rest, cum = _source_totals(scn, mb, tm, aligned, rotated, d)
        np.testing.assert_allclose(cum, np.cumsum(by_rank, axis=0))
        assert rest[0] == 1.0 and len(rest) == len(lo)
