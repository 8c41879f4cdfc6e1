"""The foundation: presets, workload, analytic model, baselines, tuner."""

import dataclasses

import numpy as np
import pytest

from mok_model.errors import MokInputError
from mok_model.params import BOUNDS, load_params
from mok_model.predict import analytic_mok, best_baseline, predict
from mok_model.presets import hardware_names, load_hardware, load_model, model_names
from mok_model.scenario import Config, Scenario
from mok_model.tuner import tune
from mok_model.workload import make_routing, traffic_from_routing

GB300 = load_hardware("gb300-nvl72")
KIMI = load_model("kimi-k2")


def scn(hw=GB300, model=KIMI, ep=16, tokens=2048, **kw):
    return Scenario(hw, model, ep, tokens, **kw)


# ---------------------------------------------------------------- presets
def test_every_preset_number_cites_a_source():
    for name in hardware_names():
        hw = load_hardware(name)
        for f in dataclasses.fields(hw):
            value = getattr(hw, f.name)
            if isinstance(value, (int, float)) and not isinstance(value, bool) and value != 0:
                assert hw.sources.get(f.name), f"{name}.{f.name} has no source"
    for name in model_names():
        assert "docs/sources.md" in load_model(name).source


def test_every_preset_has_default_params_within_bounds():
    for name in hardware_names():
        p = load_params(None, name)
        assert set(p.values) == set(BOUNDS)
        assert p.sources and all(p.sources[k] for k in BOUNDS), name


@pytest.mark.parametrize("bad, match", [
    (dict(model=KIMI.with_(top_k=8), ep=385), "more than the 384 routed experts"),
    (dict(ep=96, hw=GB300.with_(scaleout_gbps=0.0)), "scale-up domain"),
    (dict(precision="mxfp8", hw=load_hardware("h200-hgx8"), ep=8), "mxfp8"),
    (dict(tokens=0), "tokens"),
    (dict(routing="hot:0.5"), "hot expert"),
])
def test_scenario_rejects_nonsense(bad, match):
    with pytest.raises(MokInputError, match=match):
        scn(**bad)


def test_model_and_hardware_validation():
    with pytest.raises(MokInputError, match="top_k"):
        KIMI.with_(top_k=500)
    with pytest.raises(MokInputError, match="link_gbps"):
        GB300.with_(link_gbps=0.0)


def test_a_degrade_spec_is_checked_and_a_preset_without_one_does_not_load_the_simulator():
    """A hardware's --degrade spec is parsed where it has one; a preset without one leaves the
    simulator (and networkx, 0.3 s to import) unloaded: choosing knobs never needs them."""
    import subprocess
    import sys

    with pytest.raises(MokInputError, match="empty element"):
        GB300.with_(degrade="gpu3:0.5,,gpu2:0.5")
    assert GB300.with_(degrade="gpu3:0.5").degrade == "gpu3:0.5"
    code = ("import sys; from mok_model.presets import load_hardware; load_hardware('h200-1'); "
            "print('networkx' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_scaleout_allows_ep_beyond_domain():
    s = scn(ep=128)  # gb300 has a scale-out link: two racks
    assert s.domains == 2
    assert predict(s).latency_ms > 0


# ---------------------------------------------------------------- workload
def test_routing_is_deterministic_and_distinct():
    for spec in ("uniform", "zipf:1.2", "hot:0.1"):
        a = make_routing(spec, 4, 256, 64, 8, seed=3)
        b = make_routing(spec, 4, 256, 64, 8, seed=3)
        assert np.array_equal(a, b)
        assert (np.diff(np.sort(a, axis=1), axis=1) > 0).all()
        assert not np.array_equal(a, make_routing(spec, 4, 256, 64, 8, seed=4))


def test_hot_expert_takes_its_share_and_zipf_is_skewed():
    ids = make_routing("hot:0.1", 8, 4096, 64, 8, seed=0)
    assert abs((ids == 0).mean() - 0.1) < 0.01
    z = np.bincount(make_routing("zipf:1.2", 8, 4096, 64, 8, 0).ravel(), minlength=64)
    u = np.bincount(make_routing("uniform", 8, 4096, 64, 8, 0).ravel(), minlength=64)
    assert z.max() / z.mean() > 3 > u.max() / u.mean()


def test_traffic_counts_and_dedup(tmp_path):
    ids = make_routing("uniform", 4, 128, 16, 4, seed=1)
    t = traffic_from_routing(ids, 4, 128, 16)
    assert t.rows.sum() == ids.size
    # oracle: count by hand
    for s in range(4):
        for d in range(4):
            mine = ids[s * 128:(s + 1) * 128]
            assert t.rows[s, d].sum() == (mine // 4 == d).sum()
            assert t.dedup_rows[s, d] == (mine // 4 == d).any(axis=1).sum()
    path = tmp_path / "r.txt"
    np.savetxt(path, ids, fmt="%d")
    assert np.array_equal(make_routing(str(path), 4, 128, 16, 4, 0), ids)
    np.savetxt(path, ids[:10], fmt="%d")
    with pytest.raises(MokInputError, match="shape"):
        make_routing(str(path), 4, 128, 16, 4, 0)


def _distinct_by_sort(rng, draw, shape):
    """make_routing's redraw of repeated ids as first written (a sort of every row each round):
    the oracle its pairwise compares must match draw for draw."""
    ids = draw(shape)
    while True:
        srt = np.sort(ids, axis=1)
        dup_rows = np.nonzero((srt[:, 1:] == srt[:, :-1]).any(axis=1))[0]
        if dup_rows.size == 0:
            return ids
        sub = ids[dup_rows]
        order = np.argsort(sub, axis=1, kind="stable")
        srt_sub = np.take_along_axis(sub, order, axis=1)
        later = np.zeros_like(sub, dtype=bool)
        np.put_along_axis(later, order, np.concatenate(
            [np.zeros((len(sub), 1), bool), srt_sub[:, 1:] == srt_sub[:, :-1]], axis=1), axis=1)
        sub[later] = draw((int(later.sum()),))
        ids[dup_rows] = sub


def _traffic_by_sort(ids, ep, tokens, experts):
    """traffic_from_routing as first written (each token's destinations sorted): the oracle."""
    from mok_model.workload import expert_home

    local = -(-experts // ep)
    gpu_of, slot_of = expert_home(experts, ep)
    src = np.repeat(np.arange(ep), tokens)[:, None]
    dst = gpu_of[ids]
    flat = (src * ep + dst) * local + slot_of[ids]
    rows = np.bincount(flat.ravel(), minlength=ep * ep * local).reshape(ep, ep, local)
    dsorted = np.sort(dst, axis=1)
    first = np.concatenate([np.ones((len(ids), 1), bool), dsorted[:, 1:] != dsorted[:, :-1]], axis=1)
    pair = (np.broadcast_to(src, dst.shape) * ep + dsorted)[first]
    return rows, np.bincount(pair, minlength=ep * ep).reshape(ep, ep)


@pytest.mark.parametrize("experts,k,rows", [(8, 2, 5000), (12, 8, 3000), (384, 8, 4000),
                                            (64, 1, 100), (513, 10, 2000), (300, 8, 1)])
def test_repeats_are_redrawn_as_a_sort_of_every_row_would(experts, k, rows):
    """_distinct finds repeated ids by compares of columns, not by sorting rows: the same rows,
    the same entries (each id's first occurrence in its row kept), redrawn from the same stream."""
    from mok_model.workload import _distinct

    for seed in range(3):
        a, b = np.random.default_rng(seed), np.random.default_rng(seed)
        mine = _distinct([lambda s, g=a: g.integers(0, experts, size=s)], (rows, k), experts)[0]
        want = _distinct_by_sort(b, lambda s, g=b: g.integers(0, experts, size=s), (rows, k))
        assert np.array_equal(mine, want) and a.random() == b.random()  # streams in step


@pytest.mark.parametrize("spec,ep,tokens,experts,k", [
    ("uniform", 4, 128, 16, 4), ("zipf:1.2", 16, 256, 384, 8), ("hot:0.1", 8, 64, 128, 8),
    ("uniform", 6, 100, 160, 8), ("uniform", 4, 50, 10, 3), ("uniform", 8, 32, 8, 2),
    ("zipf:1.2", 12, 40, 512, 10), ("uniform", 5, 20, 128, 1), ("uniform", 1, 64, 64, 8)])
def test_traffic_counts_as_a_sort_of_each_token_s_destinations_would(spec, ep, tokens, experts, k):
    """traffic_from_routing counts each token's first route to a GPU without sorting: the same
    rows and de-duplicated rows, on even and uneven expert placements."""
    ids = make_routing(spec, ep, tokens, experts, k, seed=5)
    t = traffic_from_routing(ids, ep, tokens, experts)
    rows, dedup = _traffic_by_sort(ids, ep, tokens, experts)
    assert np.array_equal(t.rows, rows) and np.array_equal(t.dedup_rows, dedup)
    assert t.rows.dtype == t.dedup_rows.dtype == np.int64



@pytest.mark.parametrize("spec", ["uniform", "zipf:1.2", "hot:0.1", "zipf:3"])
def test_draws_drawn_together_are_each_drawn_alone(spec, monkeypatch):
    """make_routings' draws, redrawn in lockstep (and in batches), are the arrays each draw
    gives alone: every generator consumed as if its draw were the only one."""
    from mok_model import workload
    from mok_model.workload import _distinct, make_routings

    draws = [None, 0, 1, 7, 63]
    alone = []
    for d in draws:
        rng = np.random.default_rng(3) if d is None else np.random.default_rng([3, workload.DRAW_BASE + d])
        if spec.startswith("zipf"):
            p, cdf, guide = workload._zipf_table(64, float(spec[5:]))
            perm = np.random.default_rng(3).permutation(64).astype(np.int32)
            if d is None:
                rng.permutation(64)
            if spec == "zipf:3":      # drawn without replacement (Gumbel-top-k), never redrawn
                alone.append(workload._without_replacement(rng, p, perm, (200, 8)))
                continue
            draw = lambda s, r=rng, pm=perm, c=cdf, g=guide: pm[np.minimum(  # noqa: E731
                workload._cdf_index(c, g, r.random(s)), 63)]
        else:
            low = 1 if spec.startswith("hot") else 0
            draw = lambda s, r=rng, lo=low: r.integers(lo, 64, size=s, dtype=np.int32)  # noqa: E731
        ids = _distinct([draw], (200, 8), 64)[0]
        if spec.startswith("hot"):
            hot, slot = rng.random(200) < 0.8, rng.integers(0, 8, size=200)
            ids[np.nonzero(hot)[0], slot[hot]] = 0
        alone.append(ids)
    for batch in (2 ** 24, 3 * 200 * 8):      # one batch; batches of three draws
        monkeypatch.setattr(workload, "BATCH_ROUTES", batch)
        together = make_routings(spec, 4, 50, 64, 8, 3, draws=draws)
        assert all(np.array_equal(a, b) for a, b in zip(alone, together, strict=True))


@pytest.mark.parametrize("spec,ep,tokens,experts", [("uniform", 16, 64, 384), ("uniform", 4, 300, 10),
                                                    ("uniform", 16, 8192, 384)])
def test_uniform_routing_is_the_int64_draw_as_first_written(spec, ep, tokens, experts):
    """make_routing draws int32 ids in blocks: the same draws as int64 ids redrawn by sorting rows."""
    for seed in range(2):
        rng = np.random.default_rng(seed)
        want = _distinct_by_sort(rng, lambda s, g=rng: g.integers(0, experts, size=s), (ep * tokens, 8))
        assert np.array_equal(make_routing(spec, ep, tokens, experts, 8, seed), want)


@pytest.mark.parametrize("spec,ep,tokens,experts,k", [
    ("zipf:1.2", 16, 64, 384, 8), ("zipf:0.5", 4, 300, 10, 3), ("zipf:1.2", 8, 2048, 128, 8),
    ("zipf:2.0", 4, 100, 1000, 2), ("zipf:0.05", 2, 500, 4096, 6)])
def test_zipf_routing_is_the_cdf_search_as_first_written(spec, ep, tokens, experts, k):
    """Zipf draws find each uniform draw's expert through a guide table: the same ids as
    np.searchsorted on the CDF, entries redrawn by sorting rows."""
    p = 1.0 / np.arange(1, experts + 1) ** float(spec.split(":")[1])
    cdf = np.cumsum(p / p.sum())
    for seed in range(2):
        rng = np.random.default_rng(seed)
        perm = rng.permutation(experts).astype(np.int32)
        want = _distinct_by_sort(rng, lambda n, g=rng, pm=perm: pm[np.minimum(
            np.searchsorted(cdf, g.random(n)), experts - 1)], (ep * tokens, k))
        assert np.array_equal(make_routing(spec, ep, tokens, experts, k, seed), want)


@pytest.mark.parametrize("experts,s", [(8, 1.2), (384, 1.2), (4096, 0.05), (100000, 0.5),
                                       (64, 3.0)])
def test_cdf_index_is_searchsorted_at_every_edge(experts, s):
    """_cdf_index equals np.searchsorted on the CDF for uniform draws and at the hard places:
    bucket edges, the CDF's own values and their neighbours, 0 and the largest double below 1."""
    from mok_model.workload import GUIDE_BITS, _cdf_index, _zipf_table

    _, cdf, guide = _zipf_table(experts, s)
    edges = np.arange(1 << GUIDE_BITS) / (1 << GUIDE_BITS)
    hard = np.concatenate([edges, np.nextafter(edges, 1), cdf, np.nextafter(cdf, 0),
                           np.nextafter(cdf, 1), [0.0, np.nextafter(1.0, 0)]])
    rng = np.random.default_rng(experts)
    for u in (hard[(hard >= 0) & (hard < 1)], rng.random((25_000, 8))):
        assert np.array_equal(_cdf_index(cdf, guide, u), np.searchsorted(cdf, u))


def test_expert_home_places_experts_as_first_written():
    """expert_home's placement by expert_gpu's division: the GPUs and slots of the first formula."""
    from mok_model.workload import expert_home

    for experts in range(1, 200):
        for ep in range(1, 40):
            q, r = divmod(experts, ep)
            e = np.arange(experts)
            big = r * (q + 1)  # experts on the GPUs that hold q + 1
            rest = np.maximum(e - big, 0)
            gpu, slot = expert_home(experts, ep)
            assert np.array_equal(gpu, np.where(e < big, e // (q + 1), r + rest // max(q, 1)))
            assert np.array_equal(slot, np.where(e < big, e % (q + 1), rest % max(q, 1)))


# ---------------------------------------------------------------- analytic model
def test_breakdown_adds_up_to_latency():
    for s in (scn(), scn(pass_="bwd"), scn(routing="zipf:1.2"), scn(ep=1, tokens=512)):
        for system in ("mok", "nccl-torch", "deepep", "hybridep", "comet"):
            p = predict(s, None, system)
            assert sum(p.breakdown_ms.values()) == pytest.approx(p.latency_ms, rel=1e-9)
            assert all(v >= -1e-12 for v in p.breakdown_ms.values()), p.breakdown_ms


def test_ep1_has_no_communication():
    s = scn(ep=1, tokens=1024)
    p = predict(s, Config(comm_sms=8, capacity=1.0))
    assert p.work_ms["dispatch"] > 0  # local rows are still copied into the ring buffer
    far = predict(s.with_(hardware=GB300.with_(link_gbps=1.0)), Config(comm_sms=8, capacity=1.0))
    assert far.latency_ms == pytest.approx(p.latency_ms, rel=1e-12)  # the fabric plays no part


def test_more_bandwidth_never_slows_and_more_tokens_never_speed_up():
    for model in ("kimi-k2", "glm-5", "qwen3-30b-a3b"):
        for ep in (8, 16, 64):
            base = scn(model=load_model(model), ep=ep)
            t1 = predict(base).latency_ms
            t2 = predict(base.with_(hardware=GB300.with_(link_gbps=1800.0))).latency_ms
            assert t2 <= t1 * (1 + 1e-9)
            lat = [predict(base.with_(tokens=n)).latency_ms for n in (256, 512, 1024, 2048, 4096)]
            assert all(b >= a * (1 - 1e-9) for a, b in zip(lat, lat[1:])), lat


def test_compute_bound_case_matches_flops_over_rate():
    m = load_model("mixtral-8x7b")
    s = Scenario(load_hardware("h200-1"), m, 1, 65536)
    p = load_params(None, "h200-1")
    pred = analytic_mok(s, Config(minibatch=32768, macrobatch=1 << 20, comm_sms=4, capacity=1.0), p)
    rows = 65536 * m.top_k
    flops = 6.0 * m.hidden * m.expert_width * rows
    # the GEMMs' efficiency: gemm_eff, or the parameters' measured table at this shape
    from mok_model.gemm_table import gemm_efficiency

    eff = gemm_efficiency(p, s)[0]
    rate = 989e12 * (128 / 132) * eff * (132 / 128) ** (1 - p["sm_scaling"])
    assert pred.work_ms["routed_gemm"] == pytest.approx(flops / rate * 1e3, rel=0.03)


def test_push_signalling_grows_with_ep_pull_does_not():
    def signals(mode, ep):
        s = scn(model=KIMI.with_(routed_experts=4 * ep, top_k=4), ep=ep, tokens=1024,
                hw=GB300.with_(domain_size=1024))
        return predict(s, Config(dispatch=mode, combine="push", minibatch=2048, comm_sms=32,
                                 macrobatch=1 << 20, capacity=1.0)).work_ms["signals"]
    push = [signals("push", ep) for ep in (8, 32, 128)]
    pull = [signals("pull", ep) for ep in (8, 32, 128)]
    assert push[0] < push[1] < push[2]
    # pull's per-minibatch signal is local; only the end-of-pass combine wait grows, by the
    # per-peer releases of the added peers; push pays that once per minibatch (>= 2 here) too
    per_peer = load_params(None, "gb300-nvl72")["push_signal_per_peer_us"]
    added = (128 - 8) * per_peer * 1e-3
    assert pull[2] - pull[0] == pytest.approx(added, rel=0.05)
    assert push[2] - push[0] >= 2.9 * added


def test_load_imbalance_from_a_hot_expert():
    even = predict(scn(), Config())
    hot = predict(scn(routing="hot:0.1"), Config())
    assert hot.latency_ms > even.latency_ms
    assert hot.slowest_gpu == 0  # expert 0 lives on GPU 0
    assert hot.breakdown_ms["load_imbalance"] > even.breakdown_ms["load_imbalance"]


@pytest.mark.parametrize("engine", ["analytic", "sim"])
def test_emulated_peers_copies_are_the_receivers(engine):
    # one H200 emulating EP 16: its comm SMs copy the rows it receives in every mode, so under a
    # hot expert on rank 0 a push dispatch costs what a pull does at push_copy_scale, never less;
    # on real GPUs the senders' SMs push and the hot receiver's own SMs are spared
    h200 = load_hardware("h200-1")
    params = load_params(None, "h200-1")
    cfg = dict(combine="push", minibatch=4096, comm_sms=16, macrobatch=131072, capacity=1.0)
    s = scn(hw=h200, routing="hot:0.125")
    push = predict(s, Config(dispatch="push", **cfg), params=params, engine=engine)
    pull = predict(s, Config(dispatch="pull", **cfg), params=params, engine=engine)
    assert push.latency_ms >= pull.latency_ms
    if engine == "analytic":
        assert push.work_ms["dispatch"] >= pull.work_ms["dispatch"]
        real = scn(hw=h200.with_(emulated_ranks=False, domain_size=16), routing="hot:0.125")
        push_real = predict(real, Config(dispatch="push", **cfg), params=params)
        assert push_real.work_ms["dispatch"] < push.work_ms["dispatch"]


def test_comm_order_after_dispatch_never_slower_with_pull_combine():
    h200 = load_hardware("h200-1")
    params = load_params(None, "h200-1")
    s = scn(hw=h200, tokens=2048)
    cfg = Config(dispatch="push", combine="pull", minibatch=4096, comm_sms=8, macrobatch=131072,
                 capacity=0.5)
    after = predict(s, cfg, params=params.with_values(combine_after_dispatch=1.0)).latency_ms
    interleaved = predict(s, cfg, params=params.with_values(combine_after_dispatch=0.0)).latency_ms
    assert after < interleaved   # combines of earlier minibatches overlap the last GEMMs


@pytest.mark.parametrize("engine", ["analytic", "sim"])
def test_pull_combine_owner_walk(engine):
    """Our kernel across GPUs: a home pulls owner 1's rows only after owner 0's last minibatch,
    so once the GEMMs end it still copies all of them (about half the combine at EP 2): slower
    than the published interleaving by about that copy, push combine and emulated peers (which
    walk their own minibatches only) unchanged."""
    h200 = load_hardware("h200-hgx8")
    params = load_params(None, "h200-hgx8")
    walk, mixed = (params.with_values(combine_owner_order=v) for v in (1.0, 0.0))
    s = scn(hw=h200, ep=2, tokens=4096)
    cfg = dict(dispatch="pull", minibatch=2048, comm_sms=16, macrobatch=131072, capacity=1.0)
    pull = Config(combine="pull", **cfg)
    t_walk = predict(s, pull, params=walk, engine=engine).latency_ms
    t_mixed = predict(s, pull, params=mixed, engine=engine).latency_ms
    # half the combine bytes (kimi-k2 4096 tokens: 16,384 rows of 14,336 B) at most at the
    # comm SMs' rate, at least at the link's
    half = 4096 * 8 / 2 * 2 * KIMI.hidden
    link = h200.link_gbps * 1e9 * params["link_eff"]
    sms = 16 * params["copy_gbps_per_sm"] * 1e9
    extra_ms = (t_walk - t_mixed)
    assert 0.5 * half / max(link, sms) * 1e3 < extra_ms < 1.5 * half / min(link, sms) * 1e3
    push = Config(combine="push", **cfg)
    assert predict(s, push, params=walk, engine=engine).latency_ms == pytest.approx(
        predict(s, push, params=mixed, engine=engine).latency_ms, rel=1e-9)
    one = scn(hw=load_hardware("h200-1"), ep=2, tokens=4096)
    assert predict(one, pull, params=walk, engine=engine).latency_ms == pytest.approx(
        predict(one, pull, params=mixed, engine=engine).latency_ms, rel=1e-9)


def test_capacity_overflow_is_an_error():
    with pytest.raises(MokInputError, match="overflow"):
        predict(scn(routing="hot:0.1"), Config(capacity=0.01))


# ---------------------------------------------------------------- published rows
def test_published_rows_within_tolerance():
    """The committed records of docs/sources.md (calibration/published.py)."""
    from pathlib import Path

    from calibration.fit import record_scenario
    from mok_model.records import read_records

    runs = Path(__file__).parents[1] / "calibration/runs/published/gb300_table1.jsonl"
    recs = read_records([runs])
    assert len(recs) == 10
    for rec in recs:
        s = record_scenario(rec)
        measured = rec["latency_ms"]["median"]
        if rec["system"] == "mok":
            err, limit = predict(s).latency_ms / measured - 1, 0.10
        else:  # the published best of N, D and H
            best = best_baseline(s, systems=("nccl-torch", "deepep", "hybridep"))
            err, limit = best.latency_ms / measured - 1, 0.15
        print(f"{rec['id']}: {rec['model']} {rec['tokens']} {rec['pass']} error {100 * err:+.1f}%")
        assert abs(err) <= limit


# ---------------------------------------------------------------- tuner
def test_tuner_beats_default_and_respects_fixed_knobs():
    s = scn()
    p = load_params(None, "gb300-nvl72")
    r = tune(s, p, top=5)
    assert r.evaluated > 1000 and len(r.top) == 5
    assert [t.latency_ms for t in r.top] == sorted(t.latency_ms for t in r.top)
    assert r.best.latency_ms <= predict(s, Config()).latency_ms + 1e-9
    fixed = tune(s, p, fixed={"dispatch": "push", "minibatch": 1024})
    assert all(t.config.dispatch == "push" and t.config.minibatch == 1024 for t in fixed.top)
    assert tune(s, p).best == r.best  # deterministic


def test_tuner_scores_the_least_safe_capacity_only_and_loses_nothing():
    """The capacity changes a pass only through its overflow rule and the schedule's size, so
    the tuner scores every other knob at the smallest capacity that does not overflow: its best
    is the best of tuning at each capacity in turn, and its top list differs in other knobs."""
    from mok_model.tuner import CAPACITIES, least_capacity

    for s, p in ((scn(), load_params(None, "gb300-nvl72")),
                 (Scenario(load_hardware("h200-1"), load_model("qwen3-30b-a3b"), 16, 64),
                  load_params(None, "h200-1"))):
        r = tune(s, p, top=5)
        each = []
        for cap in CAPACITIES:
            try:
                each.append(tune(s, p, fixed={"capacity": cap}, top=1).best)
            except MokInputError:  # this capacity overflows
                pass
        assert r.best == min(each, key=lambda b: b.latency_ms)
        assert r.best.config.capacity == least_capacity(s, p)
        knobs = [(t.config.dispatch, t.config.combine, t.config.minibatch, t.config.comm_sms,
                  t.config.macrobatch) for t in r.top]
        assert len(set(knobs)) == len(knobs)


def test_knob_grid_holds_every_distinct_setting_once_in_product_order():
    """The macrobatch rounding's duplicates are dropped (the first share kept): the grid is the
    distinct settings of the full product of the axes, in its order."""
    import itertools

    from mok_model.tuner import CAPACITIES, MACRO_FRACTIONS, MINIBATCHES, _ring_rows, knob_grid

    for s, fixed in ((scn(), {}), (scn(tokens=64), {"capacity": 0.25}),
                     (Scenario(load_hardware("h200-1"), load_model("qwen3-30b-a3b"), 8, 1024),
                      {"dispatch": "push", "comm_sms": 8})):
        g = knob_grid(s, fixed)
        got = list(zip(*(g[k].tolist() for k in ("dispatch_push", "combine_push", "minibatch",
                                                   "comm_sms", "macrobatch", "capacity"))))
        busiest = max(int(np.ceil(_ring_rows(s))), 1)
        axes = [[fixed["dispatch"] == "push"] if "dispatch" in fixed else [False, True],
                [fixed["combine"] == "push"] if "combine" in fixed else [True, False],
                MINIBATCHES, [fixed["comm_sms"]] if "comm_sms" in fixed
                else range(4, min(64, s.hardware.sms // 2) + 1, 4), MACRO_FRACTIONS,
                [fixed["capacity"]] if "capacity" in fixed else CAPACITIES]
        want = {}
        for d, c, mb, cs, f, cap in itertools.product(*axes):
            macro = max(-(-int(np.ceil(f * busiest)) // mb), 1) * mb
            want.setdefault((d, c, mb, cs, macro, cap), None)
        assert got == list(want)


def test_unique_rows_matches_numpy_unique():
    from mok_model.analytic import unique_rows

    rng = np.random.default_rng(0)
    for _ in range(200):
        a = rng.integers(0, 3, size=(int(rng.integers(1, 60)), int(rng.integers(1, 5))))
        for x in (a, a * 0.5):
            keys, inverse = unique_rows(x)
            want_keys, want_inverse = np.unique(x, axis=0, return_inverse=True)
            assert np.array_equal(keys, want_keys) and np.array_equal(inverse, want_inverse.ravel())


def _grid_terms(s, p, lag=None):
    from mok_model.analytic import mok_terms
    from mok_model.tuner import knob_grid

    g = knob_grid(s)
    args = [g[k] for k in ("dispatch_push", "combine_push", "minibatch", "comm_sms", "macrobatch",
                           "capacity")]
    return args, mok_terms(s, p, *args, list_lag=lag)


def _same(a, b) -> bool:
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return np.array_equal(a, b, equal_nan=np.asarray(a).dtype.kind == "f")


def test_mok_terms_scores_several_work_list_lags_in_one_call():
    """A lag per config gives each config's terms bit for bit as a call at that lag alone (the
    tuner scores the larger lags in one call); emulated ranks and real ones, FP8 too."""
    from mok_model.analytic import mok_terms

    for s, p in ((Scenario(load_hardware("h200-1"), load_model("qwen3-30b-a3b"), 8, 1024),
                  load_params(None, "h200-1")),
                 (Scenario(load_hardware("h200-1"), _drawn("syn5-h5376-i384-e16-k1"), 4, 2304,
                           precision="fp8"), load_params(None, "h200-1")),
                 (scn(ep=128, tokens=512), load_params(None, "gb300-nvl72"))):
        args, _ = _grid_terms(s, p)
        lags = np.arange(len(args[0])) % 4 + 1
        mixed = mok_terms(s, p, *args, list_lag=lags)
        for lag in (1, 2, 3, 4):
            at = lags == lag
            alone = mok_terms(dataclasses.replace(s, list_lag=lag), p, *(a[at] for a in args))
            for key in ("total", "overflow", "slowest_gpu", "bound"):
                assert _same(mixed[key][at], alone[key]), (lag, key)
            for group in ("terms", "work"):
                assert _same({k: v[at] for k, v in mixed[group].items()}, alone[group])


def test_emulated_ranks_ask_every_rank_whether_the_list_binds():
    """One GPU emulating the group computes rank 0's time only, but list_binds (where a larger
    lag may help) still asks every rank, as the in-order list's period on all of them says."""
    from mok_model.analytic import list_binds, list_period, loads, minibatch_tiles

    h200, p = load_hardware("h200-1"), load_params(None, "h200-1")
    for s in (Scenario(h200, _drawn("syn5-h5376-i384-e16-k1"), 4, 2304),
              Scenario(h200, load_model("qwen3-30b-a3b"), 8, 1024)):
        args, r = _grid_terms(s, p)
        assert (r["slowest_gpu"] == 0).all()
        mb = args[2].astype(float).reshape(-1, 1)
        cx = s.hardware.sms - args[3].astype(float).reshape(-1, 1)
        epilogue = args[1].reshape(-1, 1) & (p["combine_in_epilogue"] >= 0.5)
        joined = cx + np.where(epilogue, p["comm_join_share"], 0.0) * args[3].reshape(-1, 1)
        M, tiles = minibatch_tiles(s, p, loads(s), mb)
        assert M.shape[1] == s.ep
        want = ((list_period(s, p, tiles / M, cx) > 0)
                | (list_period(s, p, tiles / M, joined) > 0)).any(axis=1)
        assert np.array_equal(list_binds(s, p, *args[1:4]), want) and want.any()


def _drawn(name: str):
    from pathlib import Path

    seed = name.split("-")[0][3:]
    return load_model(str(Path(__file__).resolve().parents[1] / "calibration" / "drawn_shapes"
                          / f"seed{seed}" / f"{name}.toml"))


def test_tuner_chooses_the_work_list_lag_where_the_list_binds():
    """With list_lags the tuner scores the larger lags only where the in-order list binds at the
    smallest (elsewhere a lag can only lengthen the combine tail): its pick is as good as tuning
    every lag in full. Narrow experts under a wide H (measured 0.198 -> 0.182 ms best, lag 4:
    calibration/runs/h200_drawn/lag_sweep.jsonl.gz) take a lag; kimi-k2's wide experts keep 1."""
    from mok_model.tuner import LIST_LAGS

    h200, p = load_hardware("h200-1"), load_params(None, "h200-1")
    narrow = Scenario(h200, _drawn("syn5-h5376-i384-e16-k1"), 4, 2304)
    r = tune(narrow, p, list_lags=LIST_LAGS)
    each = [tune(dataclasses.replace(narrow, list_lag=lag), p, top=1).best for lag in LIST_LAGS]
    assert r.best.latency_ms == pytest.approx(min(b.latency_ms for b in each), rel=1e-12)
    assert r.best.list_lag > 1 and r.best.latency_ms < 0.99 * each[0].latency_ms
    assert tune(Scenario(h200, KIMI, 16, 2048), p, list_lags=LIST_LAGS).best.list_lag == 1
    assert tune(narrow, p).best.list_lag == 1          # no list_lags: the scenario's lag


def test_a_lag_past_the_last_two_minibatches_leaves_their_pull_combine_to_the_end():
    """At lag L the down items of the last min(L + 1, M) minibatches follow the last gate/up
    items; each past two adds the pull combine its comm SMs copy beyond the down's time
    (measured, syn4 EP 8, 1,792 tokens, pull combine, minibatch 2048: 0.294 / 0.300 / 0.311 /
    0.317 ms at lag 1-4, on the copy loop of the time). Push combine from the epilogue leaves no
    such tail."""
    h200, p = load_hardware("h200-1"), load_params(None, "h200-1")
    s = Scenario(h200, _drawn("syn4-h2560-i448-e32-k6"), 8, 1792, copy_loop="serial")
    times = {}
    for combine in ("pull", "push"):
        cfg = Config(dispatch="pull", combine=combine, minibatch=2048, comm_sms=32,
                     macrobatch=131072, capacity=1.0)
        times[combine] = [predict(dataclasses.replace(s, list_lag=lag), cfg, params=p).latency_ms
                          for lag in (1, 2, 3, 4)]
    assert times["pull"] == sorted(times["pull"]) and times["pull"][3] > 1.03 * times["pull"][0]
    assert times["push"] == sorted(times["push"], reverse=True)


@pytest.mark.parametrize("engine", ["analytic", "sim"])
def test_in_order_work_list_waits_behind_a_minibatch_in_flight(engine, monkeypatch):
    """Our kernel's compute walks its work list in order: with the dispatch behind the GEMMs
    (2 comm SMs), the previous minibatch's down waits for the last rows, so the pass ends about
    one minibatch's down later than a work-conserving list would; never earlier."""
    import mok_model.analytic as analytic
    import mok_model.sim.mok as sim_mok

    h200 = load_hardware("h200-hgx8")
    params = load_params(None, "h200-hgx8")
    s = scn(hw=h200, ep=2, tokens=2048)
    cfg = Config(dispatch="pull", combine="push", minibatch=2048, comm_sms=2, macrobatch=131072,
                 capacity=1.0)
    in_order = predict(s, cfg, params=params, engine=engine)
    assert bool(np.all(analytic.in_order_wait(s, params, np.array([[16.0]]), 130)))
    for mod in (analytic, sim_mok):
        monkeypatch.setattr(mod, "in_order_wait", lambda *a: np.asarray(False))
    free = predict(s, cfg, params=params, engine=engine)
    assert in_order.latency_ms > free.latency_ms
    # about one minibatch's down (1/3 of its FLOPs) is what the wait adds: less than one
    # minibatch's GEMMs (16,384 routed rows in 8 minibatches of 2,048)
    assert in_order.latency_ms - free.latency_ms < in_order.work_ms["routed_gemm"] / 8


@pytest.mark.parametrize("engine", ["analytic", "sim"])
def test_an_old_record_s_zero_shared_slot_is_counted(engine):
    """Before 2026-12-01 our forward also walked a zero shared expert of the routed width over
    the N home tokens of a model without one (Scenario.zero_shared_slot, set for such records by
    records.record_zero_shared_slot): a mixtral-8x7b forward paid a dense FFN of its width over
    its home tokens (at EP 8, 4096 tokens: half the routed rows again); a model with a shared
    expert and the backward (which never ran the slot) do not change, nor does a prediction
    (today's kernel)."""
    from calibration.cli import priors_for

    p = priors_for("h200-1")
    cfg = Config(dispatch="pull", combine="push", minibatch=4096, comm_sms=32)

    def t(model, old, pass_="fwd"):
        s = Scenario(load_hardware("h200-1"), load_model(model), 8, 4096, pass_=pass_,
                     zero_shared_slot=old)
        return predict(s, cfg, "mok", p, engine).latency_ms

    assert t("mixtral-8x7b", True) > 1.25 * t("mixtral-8x7b", False)
    assert t("kimi-k2", True) == pytest.approx(t("kimi-k2", False), rel=1e-12)
    assert t("mixtral-8x7b", True, "bwd") == pytest.approx(t("mixtral-8x7b", False, "bwd"), rel=1e-12)


def test_records_say_whether_their_kernel_ran_the_zero_shared_slot():
    """A forward MoK or mok-gemm record of a model without a shared expert ran the zero slot
    unless its tiles say zero_shared_slot 0 (written by every record since the fix); library
    GEMMs, models with a shared expert and backward records never did."""
    from mok_model.records import record_scenario, record_zero_shared_slot

    def rec(system="mok", model="mixtral-8x7b", pass_="fwd", tiles=None):
        r = {"system": system, "model": model, "pass": pass_, "source": "measured",
             "hardware": {"preset": "h200-1"}, "ep": 8, "tokens": 256, "precision": "bf16",
             "routing": {"kind": "uniform", "seed": 0}}
        return r | ({"tiles": tiles} if tiles is not None else {})

    assert record_zero_shared_slot(rec())
    assert record_zero_shared_slot(rec("mok-gemm", tiles={"block_m": 128}))
    assert not record_zero_shared_slot(rec(tiles={"zero_shared_slot": 0}))
    assert not record_zero_shared_slot(rec("gemm-only"))
    assert not record_zero_shared_slot(rec(model="kimi-k2"))
    assert not record_zero_shared_slot(rec(pass_="bwd"))
    assert record_scenario(rec()).zero_shared_slot
    assert not record_scenario(rec(tiles={"zero_shared_slot": 0})).zero_shared_slot


def _kernel_record(system: str, model: str, ep: int, tokens: int, tiles: dict | None = None,
                   gpus: int = 1) -> dict:
    """A measured BF16 forward record of `system` on one H200 (132 SMs), uniform routing; its
    `tiles` only where given."""
    r = {"system": system, "model": model, "pass": "fwd", "source": "measured",
         "hardware": {"preset": "h200-1", "gpus": gpus, "sms": 132}, "ep": ep, "tokens": tokens,
         "precision": "bf16", "routing": {"kind": "uniform", "seed": 0}, "note": ""}
    return r | ({"tiles": tiles} if tiles is not None else {})


def test_records_say_the_down_split_their_kernel_ran_when_it_is_not_todays():
    """Records name split_dn when it is above 1, so a forward record of our kernel without it ran
    one K slice: every record before the split became the shape's (2026-12-01). Where that
    differs from what MoKLayer picks today (mixtral-8x7b at EP 8 with 64 tokens: 4), the scenario
    carries it and the GEMM phases are modelled with it; where it agrees, and for records of
    other systems, the scenario is today's (split_dn 0: the layer's choice)."""
    from mok_model import gemm_table
    from mok_model.records import record_scenario, record_split_dn

    def rec(system="mok", tiles=None, tokens=64, model="mixtral-8x7b"):
        return _kernel_record(system, model, 8, tokens, tiles)

    old, today = rec(tiles={"zero_shared_slot": 0}), rec(tiles={"zero_shared_slot": 0, "split_dn": 4})
    assert record_split_dn(old) == 1 and record_split_dn(today) == 0
    assert record_split_dn(rec(tokens=4096)) == 0            # today's choice there is 1 as well
    assert record_split_dn(rec("gemm-only")) == 0
    assert record_split_dn(rec("mok-gemm", tiles={"split_dn": 2})) == 2
    s_old, s_today = record_scenario(old), record_scenario(today)
    assert s_old.split_dn == 1 and s_today.split_dn == 0
    assert gemm_table.split_dn(s_old) == 1 and gemm_table.split_dn(s_today) == 4
    f_old, f_today = gemm_table.phase_features(s_old), gemm_table.phase_features(s_today)
    assert f_today["dn"][0][0] == 4 * f_old["dn"][0][0]     # four K slices per down item
    with pytest.raises(MokInputError, match="split_dn"):
        s_old.with_(split_dn=-1)


def test_records_say_the_work_list_lag_their_kernel_ran():
    """A forward record of our kernel names list_lag when it is not 1 (mok_kernels/bench.py
    forward_tiles); its scenario carries it, it is a kernel variant of its own (kept out of the
    fits of today's kernel), and every other record reads 1."""
    from mok_model.records import default_variant, record_list_lag, record_scenario, variant_label

    def rec(system="mok", tiles=None):
        return _kernel_record(system, "qwen3-30b-a3b", 16, 2048, tiles)

    lagged = rec(tiles={"zero_shared_slot": 0, "list_lag": 2})
    assert record_list_lag(lagged) == 2 and record_scenario(lagged).list_lag == 2
    assert record_list_lag(rec(tiles={"zero_shared_slot": 0})) == 1
    assert record_list_lag(rec("gemm-only", tiles={"list_lag": 2})) == 1
    assert not default_variant(lagged) and "list_lag 2" in variant_label(lagged)
    # today's kernel walks 4 down blocks an item at this shape (tiles.forward_dn_blocks); a
    # record of one block an item is described as it ran, not a variant of its own
    assert default_variant(rec(tiles={"zero_shared_slot": 0, "dn_blocks": 4}))
    assert default_variant(rec(tiles={"zero_shared_slot": 0}))


def test_records_say_the_down_blocks_their_kernel_ran_when_they_are_not_todays():
    """Records name dn_blocks when it is above 1, so a forward record of our kernel without it
    walked one down block an item: every record before the blocks became the shape's
    (2026-12-04). Where that differs from what MoKLayer picks today (qwen3-30b-a3b at EP 8 with
    4,096 tokens: 4), the scenario carries it and the GEMM phases are modelled with it (a
    quarter of the down items, each of four blocks' FLOPs); where it agrees, and for other
    systems, the scenario is today's (dn_blocks 0: the layer's choice)."""
    from mok_model import gemm_table
    from mok_model.records import (default_dn_blocks, ran_todays_choices, record_dn_blocks,
                                   record_scenario, todays_kernel)

    def rec(system="mok", tiles=None, tokens=4096, model="qwen3-30b-a3b", gpus=1):
        return _kernel_record(system, model, 8, tokens, tiles, gpus)

    old, today = rec(tiles={"zero_shared_slot": 0}), rec(tiles={"zero_shared_slot": 0, "dn_blocks": 4})
    assert default_dn_blocks(old) == 4 and default_dn_blocks(rec(model="kimi-k2")) == 1
    assert default_dn_blocks(rec(tokens=1024)) == 2 and default_dn_blocks(rec(gpus=2)) == 1
    assert record_dn_blocks(old) == 1 and record_dn_blocks(today) == 0
    assert record_dn_blocks(rec(model="kimi-k2")) == 0       # today's choice there is 1 as well
    assert record_dn_blocks(rec("gemm-only")) == 0
    assert record_dn_blocks(rec("mok-gemm", tiles={"dn_blocks": 2})) == 2
    s_old, s_today = record_scenario(old), record_scenario(today)
    assert s_old.dn_blocks == 1 and s_today.dn_blocks == 0
    assert gemm_table.dn_blocks(s_old) == 1 and gemm_table.dn_blocks(s_today) == 4
    f_old, f_today = gemm_table.phase_features(s_old), gemm_table.phase_features(s_today)
    assert f_old["dn"][0][0] == 4 * f_today["dn"][0][0]     # a quarter of the items
    assert f_today["dn"][0][1] == 4 * f_old["dn"][0][1]     # of four blocks each
    assert gemm_table.dn_blocks(s_today.with_(precision="fp8")) == 1
    # both stay in the fits and held-out figures; a table of today's speed reads only today's
    assert todays_kernel(old) and todays_kernel(today)
    assert ran_todays_choices(today) and not ran_todays_choices(old)
    with pytest.raises(MokInputError, match="dn_blocks"):
        s_old.with_(dn_blocks=-1)


def test_parameters_with_an_unknown_name_are_refused():
    from calibration.cli import priors_for

    with pytest.raises(ValueError, match="unknown parameters"):
        priors_for("h200-1").with_values(empty_shared_slot=1.0)


def test_decode_sizes_predict_the_median_routing_draw():
    """A run record's median is over fresh routing draws (one per timed iteration). On a real
    group, where a rank's experts get few rows each, the model takes the draw whose busiest GPU
    has the median active-expert count of workload.DRAWS draws under the seed's expert
    popularity; elsewhere the seed's own draw (the draws agree there)."""
    import numpy as np

    from mok_model import workload as wl
    from mok_model.analytic import loads

    hw, m = load_hardware("h200-hgx8"), load_model("llama4-maverick")
    assert not hw.emulated_ranks
    s = Scenario(hw, m, 4, 64, routing="zipf:1.2")
    per_draw = [int((wl._cached_traffic("zipf:1.2", 4, 64, 128, 1, 0, "model", i).rows
                     .sum(axis=0) > 0).sum(axis=1).max()) for i in range(wl.DRAWS)]
    active = int((loads(s).expert_rows > 0).sum(axis=1).max())
    assert active == sorted(per_draw)[wl.DRAWS // 2]
    # every draw keeps the seed's popularity order: the hottest expert is the same one
    hot = [np.bincount(wl.make_routing("zipf:1.2", 4, 64, 128, 1, 0, draw=i).ravel(),
                       minlength=128).argmax() for i in range(3)]
    assert len(set(hot)) == 1
    big = Scenario(hw, m, 4, 4096, routing="zipf:1.2")
    own = wl.traffic_from_routing(wl.make_routing("zipf:1.2", 4, 4096, 128, 1, 0), 4, 4096, 128)
    assert np.array_equal(wl.traffic(big).rows, own.rows)


def test_an_emulated_rank_takes_the_draw_of_its_median_row_tiles():
    """One emulated rank (h200-1: rank 0 alone is timed) is read by what its GEMMs cost: where a
    local expert's expected rows are under FEW_TILES_PER_EXPERT tiles of the kernel's 128 rows,
    the model takes, of TILE_DRAWS draws, the one whose rank 0 has the median row tiles (ties:
    active experts). mixtral-8x7b EP 8 at 64 tokens (one expert a GPU, 128 rows expected): the
    seed's own draw gives rank 0 119 rows (one tile), most draws two tiles; llama4-maverick EP 8
    at 64 tokens, zipf:1.2 (top-1, 16 experts a GPU): draws 0-7 give rank 0 13-14 active experts,
    the distribution 11.4 on average (its median 11), which TILE_DRAWS draws find."""
    import numpy as np

    from mok_model import workload as wl
    from mok_model.analytic import loads

    h1 = load_hardware("h200-1")
    assert h1.emulated_ranks and wl.TILE_DRAWS > wl.DRAWS
    mx = Scenario(h1, load_model("mixtral-8x7b"), 8, 64)
    own = wl._cached_traffic("uniform", 8, 64, 8, 2, 0).expert_rows()[0]
    assert own.tolist() == [119]
    tiles = sorted(int(np.ceil(wl._cached_traffic("uniform", 8, 64, 8, 2, 0, "model", i)
                               .expert_rows()[0] / 128).sum()) for i in range(wl.TILE_DRAWS))
    rows = int(loads(mx).expert_rows[0].sum())
    assert rows > 128 and int(np.ceil(rows / 128)) == tiles[wl.TILE_DRAWS // 2] == 2
    m = load_model("llama4-maverick")
    s = Scenario(h1, m, 8, 64, routing="zipf:1.2")
    active = [int((wl._cached_traffic("zipf:1.2", 8, 64, 128, 1, 0, "model", i).expert_rows()[0]
                   > 0).sum()) for i in range(wl.TILE_DRAWS)]
    assert min(active[:wl.DRAWS]) >= 13            # the first 8 draws: a poor estimate here
    assert int((loads(s).expert_rows[0] > 0).sum()) == sorted(active)[wl.TILE_DRAWS // 2] <= 12
    # 4 tiles a local expert and more: the seed's own draw (mixtral EP 4 at 2,048 tokens: 2
    # experts of ~1,024 rows each)
    big = Scenario(h1, load_model("mixtral-8x7b"), 4, 2048)
    seed = wl.traffic_from_routing(wl.make_routing("uniform", 4, 2048, 8, 2, 0), 4, 2048, 8)
    assert np.array_equal(wl.traffic(big).rows, seed.rows)
    # FP8 on the Triton kernel counts its 64-row tiles
    assert wl.draw_tile_rows(mx.with_(precision="fp8")) == 64 and wl.draw_tile_rows(mx) == 128


def test_boundary_split_share_follows_the_kernels_tile_aligned_cut():
    """A minibatch boundary falls inside an expert only where the row it aims at lies in a tile
    that is not the expert's last (mok_kernels/schedule.py): none where every expert fits one
    tile, and the analytic pass then costs what the simulator's exact cut says (glm-5, EP 32,
    64 tokens: 8 experts of about 64 rows each; measured flat across minibatch 256-2048,
    calibration/runs/h200_drawn/auto_decode_a.jsonl.gz)."""
    from mok_model.analytic import boundary_split_share
    from mok_model.sim import simulate

    share = boundary_split_share(np.array([[64, 64, 64], [256, 256, 0], [1000, 0, 0]]), 128)
    assert np.allclose(share, [0.0, 0.5, 896 / 1000])
    s = Scenario(load_hardware("h200-1"), load_model("glm-5"), 32, 64)
    cfg = {mb: Config("pull", "push", mb, 32, 131072, 1.0) for mb in (256, 1024)}
    ana = {mb: predict(s, c, "mok").latency_ms for mb, c in cfg.items()}
    sim = {mb: simulate(s, c, "mok").latency_ms for mb, c in cfg.items()}
    assert abs(ana[256] / ana[1024] - sim[256] / sim[1024]) < 0.03
    assert ana[256] / ana[1024] < 1.05


def test_buffers_of_a_minibatch_past_the_rows_are_those_of_the_rows():
    """A minibatch larger than every row a GPU can receive holds no more rows (the kernel sizes
    its ring by the capacity rows at most): its buffers are those of one such minibatch, so a
    huge --minibatch is not refused for memory it would never take. Below, the ring holds at
    least a minibatch (and a row tile) beyond a smaller macrobatch."""
    from mok_model.tuner import buffer_bytes
    scn = Scenario(load_hardware("gb300-nvl72"), load_model("kimi-k2"), 16, 64)
    rows = 16 * 64 * 8                      # capacity 1.0: every route of every token
    at_rows = buffer_bytes(scn, rows, 131072, 1.0)
    assert buffer_bytes(scn, 100_000_000, 131072, 1.0) == at_rows
    ring_growth = (buffer_bytes(scn, 4096, 1024, 1.0) - buffer_bytes(scn, 512, 1024, 1.0))
    assert ring_growth > 0.999 * (4096 + 128 - 1024) * 7168 * 2    # (the schedule shrinks a little)
