"""Discrete-event simulator: invariants, agreement with the analytic model where they should agree,
and the behaviours the design is about (signalling, ring buffer, hot expert, comm SMs)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from mok_model.params import load_params
from mok_model.predict import analytic_mok, predict
from mok_model.presets import load_hardware, load_model
from mok_model.scenario import Config, Scenario
from mok_model.sim import SimInvariantError, simulate
from mok_model.sim.fabric import Fluid
from mok_model.sim.mok import MokSim

GB300 = load_hardware("gb300-nvl72")
P_GB300 = load_params(None, "gb300-nvl72")
KIMI = load_model("kimi-k2")
ONE_MB = 1 << 22  # a minibatch larger than any GPU's rows: one pipeline step


def scn(ep=16, tokens=2048, routing="uniform", model=None, hw=GB300, seed=0, **kw) -> Scenario:
    m = model or KIMI.with_(routed_experts=4 * ep)
    return Scenario(hw, m, ep, tokens, routing=routing, seed=seed, **kw)


def sim(s: Scenario, cfg: Config, **kw):
    return simulate(s, cfg, "mok", P_GB300 if s.hardware.name == "gb300-nvl72" else None, **kw)


def spans(pred, gpu: int) -> dict[str, tuple[float, float]]:
    """name -> (start_ms, end_ms) of one GPU's compute phases and operation streams."""
    return {n: (s, s + d) for _, n, s, d in pred.extra["timelines"][gpu]}


# ---------------------------------------------------------------- invariants


@pytest.mark.parametrize("cfg", [Config(minibatch=2048, capacity=1.0),
                                 Config(dispatch="push", combine="pull", minibatch=4096, capacity=1.0),
                                 Config(minibatch=2048, macrobatch=4096, capacity=1.0)])
def test_invariants_hold_and_breakdown_adds_up(cfg):
    p = sim(scn(ep=8, routing="zipf:1.2"), cfg)
    assert p.extra["invariants"] == "ok" and p.extra["events"] > 0
    assert math.isclose(sum(p.breakdown_ms.values()), p.latency_ms, rel_tol=1e-9)
    assert all(v >= -1e-12 for v in p.breakdown_ms.values()), p.breakdown_ms


def test_no_event_before_its_dependency():
    p = sim(scn(ep=8), Config(minibatch=2048, macrobatch=4096))
    for g in range(8):
        sp = spans(p, g)
        M = sum(1 for n in sp if n.startswith("dispatch mb"))
        assert M >= 4
        for i in range(M):
            assert sp[f"gate_up+swiglu mb{i}"][0] >= sp[f"dispatch mb{i}"][1] - 1e-12
            assert sp[f"down mb{i}"][0] >= sp[f"gate_up+swiglu mb{i}"][1] - 1e-12
            assert sp[f"combine mb{i}"][0] >= sp[f"down mb{i}"][1] - 1e-12
        assert sp["reduction"][0] >= max(e for n, (_, e) in sp.items() if n.startswith("combine")) - 1e-12


def test_same_seed_same_result_other_seed_differs():
    a = sim(scn(ep=8, routing="zipf:1.0", seed=3), Config(minibatch=2048, capacity=1.0))
    b = sim(scn(ep=8, routing="zipf:1.0", seed=3), Config(minibatch=2048, capacity=1.0))
    c = sim(scn(ep=8, routing="zipf:1.0", seed=4), Config(minibatch=2048, capacity=1.0))
    assert a.latency_ms == b.latency_ms and a.breakdown_ms == b.breakdown_ms
    assert a.extra["events"] == b.extra["events"] and a.extra["timelines"] == b.extra["timelines"]
    assert c.latency_ms != a.latency_ms


def test_a_lost_message_breaks_an_invariant(monkeypatch):
    """Drop one flow that crosses a link: the checker must notice (rows or bytes not conserved)."""
    start = Fluid.start
    dropped = []

    def lossy(self, res, w, nbytes, done):
        if len(res) > 1 and not dropped:
            dropped.append(res)
            return
        start(self, res, w, nbytes, done)

    monkeypatch.setattr(Fluid, "start", lossy)
    with pytest.raises(SimInvariantError):
        sim(scn(ep=4), Config(minibatch=2048, capacity=1.0))


def test_a_row_lost_from_the_schedule_breaks_an_invariant():
    s = scn(ep=4)
    m = MokSim(s, P_GB300, Config(minibatch=2048, capacity=1.0))
    j = int(np.nonzero(m.plan.rows[1][0][1:])[0][0]) + 1
    m.plan.rows[1][0][j] -= 1  # the schedule forgets one routed row from a peer
    with pytest.raises(SimInvariantError, match="dispatched|rows lost"):
        m.run()


# ---------------------------------------------------------------- agreement with the analytic model


def _grid() -> list[tuple[Scenario, Config]]:
    out = []
    h200 = load_hardware("h200-hgx8")
    b300 = load_hardware("b300-dgx8")
    for m in (KIMI, load_model("deepseek-v3"), load_model("qwen3-30b-a3b")):
        for ep in (8, 16, 32):
            for tokens in (512, 4096):
                for mode in (("pull", "push"), ("push", "pull")):
                    mm = m.with_(routed_experts=ep * max(1, m.routed_experts // ep))
                    out.append((scn(ep=ep, tokens=tokens, model=mm),
                                Config(dispatch=mode[0], combine=mode[1], minibatch=ONE_MB,
                                       macrobatch=2 * ONE_MB, capacity=1.0)))
    for hw in (h200, b300):
        for tokens in (1024, 8192):
            for prec in ("bf16", "fp8"):
                out.append((scn(ep=8, tokens=tokens, model=KIMI, hw=hw, precision=prec),
                            Config(minibatch=ONE_MB, macrobatch=2 * ONE_MB, comm_sms=24, capacity=1.0)))
    return out


PUBLISHED = {"combine_in_epilogue": 0.0, "comm_join_share": 0.0}  # the published kernel's choices


def test_single_minibatch_agrees_with_analytic_within_5_percent():
    """The published design (comm SMs push the combine, never compute) on every grid point:
    pull dispatch / push combine within 5 %. Push dispatch / pull combine within 8 %: the
    comm-SM time of push releases and pull polls is not simulated (docs/sim-study.md,
    section 1)."""
    grid = _grid()
    assert len(grid) >= 30
    worst = {"pull/push": (0.0, None), "push/pull": (0.0, None)}
    for s, cfg in grid:
        p = load_params(None, s.hardware.name).with_values(**PUBLISHED)
        a = analytic_mok(s, cfg, p)
        b = simulate(s, cfg, "mok", p)
        assert b.extra["minibatches"] == 1
        err = abs(b.latency_ms - a.latency_ms) / a.latency_ms
        mode = f"{cfg.dispatch}/{cfg.combine}"
        if err > worst[mode][0]:
            worst[mode] = (err, f"{s.hardware.name} {s.model.name} EP{s.ep} N{s.tokens} {s.precision} "
                                f"{mode}: sim {b.latency_ms:.4f} ms, analytic {a.latency_ms:.4f} ms")
    for mode, w in worst.items():
        print(f"\nworst {mode} of the single-minibatch workloads: {w[0]:.2%} ({w[1]})")
    # 3.1% since session 31's fix of the flow-recomputation window (5.04% just before it)
    assert worst["pull/push"][0] < 0.05, worst
    # 8%: the worst push/pull (gb300 qwen3-30b EP 32, 512 tokens) reads 7.6% fast since session
    # 47, when a minibatch's copies started together across every peer (sim-study.md "M"); the
    # worst read 11.1-12.6% slow before (gb300 qwen3-30b EP 16, 4,096 tokens: the homes' comm SMs
    # read the owners that finished first one window at a time, the last owners' egress alone)
    assert worst["push/pull"][0] < 0.08, worst


def test_epilogue_combine_leaves_comm_sms_free_and_waits_for_the_down_gemm():
    s = scn(ep=8, tokens=2048)
    p = P_GB300.with_values(combine_in_epilogue=1.0, comm_join_share=0.0)
    e = simulate(s, Config(minibatch=4096), "mok", p)
    c = simulate(s, Config(minibatch=4096), "mok", P_GB300.with_values(**PUBLISHED))
    assert e.extra["invariants"] == "ok"
    assert e.work_ms["combine"] == 0 and c.work_ms["combine"] > 0  # no comm-SM time on combine
    sp = spans(e, 0)
    for i in range(e.extra["minibatches"]):
        assert sp[f"combine mb{i} (epilogue)"][1] >= sp[f"down mb{i}"][1] - 1e-12


def test_comm_sms_joining_the_compute_shorten_the_gemms_after_dispatch():
    s = scn(ep=8, tokens=2048)
    cfg = Config(minibatch=ONE_MB, macrobatch=ONE_MB, comm_sms=40)
    # comm SMs join only when the combine does not need them (stored from the GEMM epilogue)
    on = simulate(s, cfg, "mok", P_GB300.with_values(comm_join_share=1.0, combine_in_epilogue=1.0))
    off = simulate(s, cfg, "mok", P_GB300.with_values(comm_join_share=0.0, combine_in_epilogue=1.0))
    d_on, d_off = spans(on, 0)["down mb0"], spans(off, 0)["down mb0"]
    ratio = (d_on[1] - d_on[0]) / (d_off[1] - d_off[0])
    assert ratio < 0.95 and on.latency_ms < off.latency_ms  # 148 instead of 108 SMs


def test_predict_and_tune_switch_engine_with_one_argument():
    s = scn(ep=8, tokens=1024)
    a = predict(s, {"minibatch": 2048}, "mok", P_GB300, engine="analytic")
    b = predict(s, {"minibatch": 2048}, "mok", P_GB300, engine="sim")
    assert b.engine == "sim" and b.config == a.config
    assert abs(b.latency_ms - a.latency_ms) / a.latency_ms < 0.15
    assert "timelines" not in b.as_json() and b.as_json()["invariants"] == "ok"


# ---------------------------------------------------------------- behaviours


def test_push_signal_wait_grows_with_ep_pull_stays_flat():
    waits = {"push": [], "pull": []}
    for mode in waits:
        for ep in (8, 16, 32, 64):
            p = sim(scn(ep=ep, tokens=1024), Config(dispatch=mode, minibatch=4096))
            waits[mode].append(p.extra["dispatch_signal_wait_ms"])
    push, pull = np.array(waits["push"]), np.array(waits["pull"])
    assert (np.diff(push) > 0).all() and push[-1] > 2 * push[0], push
    assert np.ptp(pull) <= 1e-3 * pull.max(), pull
    assert (push > pull).all()


def test_half_macrobatch_costs_a_few_percent_not_a_collapse():
    s = scn(ep=16, tokens=4096)
    busiest = 16 * 4096 * KIMI.top_k // 16  # routed rows per GPU, on average
    full = sim(s, Config(minibatch=4096, macrobatch=2 * busiest))
    half = sim(s, Config(minibatch=4096, macrobatch=busiest // 2))
    ratio = half.latency_ms / full.latency_ms
    print(f"\nmacrobatch half / all rows: {ratio:.4f} (ring wait {half.extra['ring_wait_ms']:.3f} ms)")
    assert half.extra["ring_wait_ms"] > 0  # the ring did fill and push back
    # a half ring is not faster, within the contention order's noise: 0.9970 since session 70's
    # refit (the long-phase GEMM term), 0.9988 since session 47 (a minibatch's copies start
    # together: a tight ring starts them as its slots free), 1.0002 since session 31's
    # recomputation-window fix, 0.9978 before it (copies freed early)
    assert 0.995 <= ratio < 1.08


def test_hot_expert_slows_the_pass_through_its_owner():
    s_uni, s_hot = scn(ep=16, tokens=4096), scn(ep=16, tokens=4096, routing="hot:0.1")
    uni = sim(s_uni, Config(minibatch=4096))
    hot = sim(s_hot, Config(minibatch=4096))
    assert hot.latency_ms > 1.5 * uni.latency_ms
    assert hot.extra["busiest_gpu"] == 0  # expert 0 lives on GPU 0, whose work ends last
    ends = [max(e for _, n, s, d in hot.extra["timelines"][g] for e in [s + d] if n.startswith("down"))
            for g in range(16)]
    assert int(np.argmax(ends)) == 0
    # every GPU waits for GPU 0's combine, so the pass ends no earlier than GPU 0's last push
    sp0 = spans(hot, 0)
    last_combine = max(e for n, (_, e) in sp0.items() if n.startswith("combine"))
    assert hot.extra["gpu_end_ms"]["max"] >= last_combine - 1e-9


def test_few_comm_sms_make_dispatch_sm_bound_many_link_bound():
    s = scn(ep=16, tokens=4096)
    dur = {}
    for c in (4, 8, 40, 60):
        p = sim(s, Config(minibatch=ONE_MB, macrobatch=ONE_MB, comm_sms=c))
        dur[c] = spans(p, 0)["dispatch mb0"]
        dur[c] = dur[c][1] - dur[c][0]
        if c == 4:
            assert p.work_ms["comm_sms"] > 2 * p.work_ms["link_ingress"]  # SMs, not links, are busy
            assert p.extra["limiter"] == "comm SMs" and p.extra["bound"] == "comm"
    assert 1.9 < dur[4] / dur[8] < 2.1  # SM-bound: twice the SMs, half the time
    assert abs(dur[40] / dur[60] - 1) < 0.05  # link-bound: more SMs do not help


def test_published_schedule_beats_naive_in_order_schedule():
    s = scn(ep=16, tokens=4096)
    pub = sim(s, Config(minibatch=4096))
    naive = sim(s, Config(minibatch=4096), schedule="naive")
    assert naive.extra["invariants"] == "ok"
    assert naive.latency_ms > 1.2 * pub.latency_ms


def test_multi_domain_cross_traffic_uses_the_scale_out_link():
    hw = GB300.with_(domain_size=8)
    s = Scenario(hw, KIMI.with_(routed_experts=64), 16, 1024)
    cfg = Config(minibatch=ONE_MB, macrobatch=2 * ONE_MB)
    one = sim(scn(ep=16, tokens=1024), cfg)
    two = simulate(s, cfg, "mok", P_GB300)
    assert two.latency_ms > 1.5 * one.latency_ms  # half the rows cross a 100 GB/s NIC
    a = analytic_mok(s, cfg, P_GB300)
    print(f"\ntwo domains, one step: sim {two.latency_ms:.3f} ms, analytic {a.latency_ms:.3f} ms")
    assert abs(two.latency_ms - a.latency_ms) / a.latency_ms < 0.15  # see docs/sim-study.md F


@pytest.mark.parametrize("system", ["nccl-torch", "deepep", "hybridep", "comet"])
def test_baselines_simulate_through_the_same_fabric(system):
    s = scn(ep=8, tokens=2048)
    p = simulate(s, None, system, P_GB300)
    a = predict(s, None, system, P_GB300)
    assert p.extra["invariants"] == "ok" and p.engine == "sim" and p.config is None
    assert math.isclose(sum(p.breakdown_ms.values()), p.latency_ms, rel_tol=1e-9)
    assert abs(p.latency_ms - a.latency_ms) / a.latency_ms < 0.25
    assert p.latency_ms > sim(s, Config(minibatch=4096)).latency_ms  # MoK beats every baseline here


def test_trace_is_chrome_json_bounded_for_large_ep(tmp_path):
    f = tmp_path / "t.json"
    p = sim(scn(ep=32, tokens=1024), Config(minibatch=4096), trace=f, trace_gpus=4)
    doc = json.loads(f.read_text())
    ev = doc["traceEvents"]
    kept = {0, 1, 2, p.slowest_gpu} if p.slowest_gpu > 3 else {0, 1, 2, 3}
    assert {e["pid"] for e in ev} == kept  # the first GPUs and always the slowest
    assert doc["metadata"]["traced_gpus"] == sorted(kept) and "of 32" in doc["metadata"]["note"]
    assert p.extra["traced_gpus"] == sorted(kept)
    names = {e["name"] for e in ev if e["ph"] in ("X", "b")}
    assert {"dispatch mb0", "combine mb0", "down mb0", "shared expert"} <= names
    threads = {e["args"]["name"] for e in ev if e["name"] == "thread_name"}
    assert {"comm SMs", "compute SMs", "nvlink egress", "nvlink ingress"} <= threads
    assert all(e["dur"] >= 0 for e in ev if e["ph"] == "X")
    for g in kept:  # complete events never overlap on one thread (Perfetto needs nesting)
        for t in {e["tid"] for e in ev if e["pid"] == g and e["ph"] == "X"}:
            xs = sorted((e["ts"], e["ts"] + e["dur"]) for e in ev
                        if e["pid"] == g and e["tid"] == t and e["ph"] == "X")
            assert all(b[0] >= a[1] - 1e-3 for a, b in zip(xs, xs[1:])), (g, t)
    down = [e for e in ev if e["name"] == "down mb0"]
    assert down and all(a["args"]["waves"] == -(-a["args"]["tiles"] // a["args"]["sms"]) for a in down)
    assert p.extra["trace_events"] == len(ev)


@pytest.mark.parametrize("mode", [("pull", "push"), ("push", "pull")])
def test_peer_groups_at_large_ep_stay_close_to_per_peer_simulation(mode):
    """Large EP aggregates peers into groups (summed links and SMs); it must not move the answer."""
    s = scn(ep=32, tokens=1024)
    cfg = Config(dispatch=mode[0], combine=mode[1], minibatch=2048)
    exact = sim(s, cfg)
    grouped = sim(s, cfg, max_peers=16)  # above 16 peers: about 16 / 2 groups
    assert exact.extra["peer_groups"] is None and grouped.extra["peer_groups"] == 8
    assert grouped.extra["invariants"] == "ok" and grouped.extra["events"] < exact.extra["events"]
    assert abs(grouped.latency_ms - exact.latency_ms) / exact.latency_ms < 0.03


def test_baselines_run_with_merged_peer_groups():
    """With peers merged into groups, a group's own rows cross no link (regression: EP 144)."""
    from mok_model.params import load_params
    from mok_model.presets import load_hardware, load_model
    from mok_model.scenario import Scenario
    from mok_model.sim import simulate

    scn = Scenario(load_hardware("gb300-nvl72"), load_model("kimi-k2"), 16, 256)
    p = load_params(None, "gb300-nvl72")
    for system in ("nccl-torch", "deepep"):
        pred = simulate(scn, None, system, p, max_peers=4)
        assert pred.extra["invariants"] == "ok" and pred.latency_ms > 0


def test_measured_run_past_the_capacity_headroom_is_simulated():
    """A 2-GPU run whose capacity the model's 25% headroom would refuse (legacy zipf order) ran,
    so validation predicts it with both engines; a prediction asked for the same config by a
    user is still refused with the rule."""
    from calibration.scoring import predict_records
    from mok_model.errors import MokInputError
    from mok_model.params import load_params
    from mok_model.predict import predict
    from mok_model.records import read_records, record_config, record_scenario
    rec = next(r for r in read_records(["calibration/runs/h200x2/bench_e1.jsonl"])
               if r["id"] == "mok-deepseek-v3-ep2-n512-000d66f71e4b")
    p = load_params(None, "h200-hgx8")
    for engine in ("analytic", "sim"):
        assert np.isfinite(predict_records([rec], p, engine)).all()
    with pytest.raises(MokInputError, match="safety headroom"):
        predict(record_scenario(rec), record_config(rec), "mok", p, "sim")


def test_emulated_push_scan_grows_with_peers_in_both_engines():
    """One H200 emulating rank 0, the kernel before session 41 ("pipe" loop): an emulated push
    dispatch's lanes scan every chunk of a minibatch for their peer's rows
    (analytic.push_scan_chunks), ~P times a pull's chunks, so
    push_scan_us adds more at EP 32 than at EP 4, and the simulator (which loads the comm SMs
    with the same seconds) agrees with the analytic model."""
    from mok_model.analytic import push_scan_chunks
    assert push_scan_chunks(32, 8, 2048) == 4 * 128  # 4 lanes x all 128 chunks
    assert push_scan_chunks(4, 8, 2048) == 64  # 1 lane, its peer's chunks split over 2 lanes
    h = load_hardware("h200-1")
    m = load_model("qwen3-30b-a3b")
    base = load_params(None, "h200-1").with_values(push_copy_scale=1.0, push_scan_us=0.0)
    scan = base.with_values(push_scan_us=0.7)
    added = {}
    for ep in (4, 32):
        s = scn(ep=ep, tokens=4096, model=m, hw=h, copy_loop="pipe")
        cfg = Config(dispatch="push", combine="push", minibatch=2048, comm_sms=8, capacity=1.0)
        a0, a1 = analytic_mok(s, cfg, base).latency_ms, analytic_mok(s, cfg, scan).latency_ms
        b1 = simulate(s, cfg, "mok", scan).latency_ms
        added[ep] = a1 - a0
        assert abs(b1 - a1) / a1 < 0.10, (ep, a1, b1)
        pull = Config(dispatch="pull", combine="push", minibatch=2048, comm_sms=8, capacity=1.0)
        assert analytic_mok(s, pull, scan).latency_ms == analytic_mok(s, pull, base).latency_ms
    assert added[32] > 4 * added[4] > 0


def test_emulated_push_lanes_copying_runs_visit_tiles_not_chunks():
    """Today's kernel ("runs" loop): an emulated push lane visits the minibatch's row tiles (one
    source-id load each) and copies only its source's run, so push_scan_us adds a fraction of
    what the chunk scans add (a tile holds many chunks), in both engines, which agree; across
    real GPUs the senders' lanes copy runs of the receiver's tiles alike."""
    from mok_model.analytic import lanes_copy_runs, push_lane_visits, push_scan_chunks
    assert push_lane_visits(32, 8, 40) == 4 * 40 and push_lane_visits(4, 8, 40) == 20
    assert push_scan_chunks(32, 8, 2048) == push_lane_visits(32, 8, 128)
    h = load_hardware("h200-1")
    base = load_params(None, "h200-1").with_values(push_copy_scale=1.0, push_scan_us=0.0)
    scan = base.with_values(push_scan_us=0.7)
    cfg = Config(dispatch="push", combine="push", minibatch=2048, comm_sms=8, capacity=1.0)
    added = {}
    for loop in ("pipe", "runs"):
        s = scn(ep=32, tokens=4096, model=load_model("qwen3-30b-a3b"), hw=h, copy_loop=loop)
        a0, a1 = analytic_mok(s, cfg, base).latency_ms, analytic_mok(s, cfg, scan).latency_ms
        b0, b1 = simulate(s, cfg, "mok", base).latency_ms, simulate(s, cfg, "mok", scan).latency_ms
        assert abs(b1 - a1) / a1 < 0.10, (loop, a1, b1)
        added[loop] = (a1 - a0, b1 - b0)
    assert lanes_copy_runs(s)
    for engine in (0, 1):
        assert 0 < added["runs"][engine] < 0.5 * added["pipe"][engine], added
    real = dict(ep=2, model=load_model("qwen3-30b-a3b"), hw=load_hardware("h200-hgx8"))
    assert lanes_copy_runs(scn(**real, copy_loop="runs"))       # the senders' lanes too
    assert not lanes_copy_runs(scn(**real, copy_loop="pipe"))
    assert not lanes_copy_runs(scn(**real, copy_loop="runs", pass_="bwd"))


def test_a_scanned_chunk_costs_more_with_more_column_steps_in_both_engines():
    """A visited chunk's row loop (mok_kernels/megakernel.py copy_rows) walks the row in steps
    of min(1024, the next power of two >= H) columns, each a load and a store issued whether its
    rows are masked or not: push_scan_step_us per step on top of push_scan_us (analytic
    .scan_chunk_s), the same seconds in the simulator."""
    from mok_model.analytic import copy_steps, scan_chunk_s
    assert [copy_steps(h) for h in (512, 1000, 2048, 2880, 4096, 7168)] == [1, 1, 2, 3, 4, 7]
    h = load_hardware("h200-1")
    base = load_params(None, "h200-1").with_values(push_scan_us=0.5, push_scan_step_us=0.0)
    step = base.with_values(push_scan_step_us=0.1)
    cfg = Config(dispatch="push", combine="push", minibatch=2048, comm_sms=8, capacity=1.0)
    added = {}
    for name in ("qwen3-30b-a3b", "deepseek-v3"):   # H 2,048 and 7,168
        s = scn(ep=32, tokens=2048, model=load_model(name), hw=h, copy_loop="pipe")
        assert scan_chunk_s(s, step) == pytest.approx((0.5 + 0.1 * copy_steps(s.model.hidden)) * 1e-6)
        a0, a1 = analytic_mok(s, cfg, base).latency_ms, analytic_mok(s, cfg, step).latency_ms
        b1 = simulate(s, cfg, "mok", step).latency_ms
        assert abs(b1 - a1) / a1 < 0.10, (name, a1, b1)
        added[name] = (a1 - a0) / a0
    assert added["deepseek-v3"] > added["qwen3-30b-a3b"] > 0


def test_chunk_scans_across_gpus_cost_more_with_fewer_comm_sms():
    """Two real GPUs (our kernel, mok_kernels/megakernel.py): a push dispatch's sender lanes visit
    every row tile of the receiver's minibatch for their own run (PUSH_DISPATCH == 2; every chunk
    before session 41's "runs" loop), and a pull
    combine's home programs walk every chunk of each owner's minibatches for theirs (group pull
    combine). Each visit costs push_scan_us of comm-SM time, and a program's visits scale as
    1 / comm SMs, so where the comm SMs never join the compute (pull combine) the scans cost more
    at 16 comm SMs than at 32; with push combine a push dispatch's scan still costs time (the
    comm SMs join later); pull dispatch with push combine scans nothing. Both engines, which
    agree on the pass with the pull combine's scans (where the scans set its length: what each
    engine adds to its own pass without them differs as their overlap of the rest does)."""
    from calibration.priors import HOPPER, prior_params
    from mok_model.analytic import pull_scan_chunks, push_scan_chunks
    assert push_scan_chunks(2, 16, 2048) == 16  # 8 lanes per receiver x 128 chunks
    s = scn(hw=load_hardware("h200-hgx8"), ep=2, tokens=4096, model=load_model("qwen3-235b-a22b"))
    # the priors, not the shipped fit: the regime the test needs must not move with each refit
    base = prior_params("h200-hgx8", HOPPER).with_values(push_scan_us=0.0)
    scan = base.with_values(push_scan_us=3.0)
    rows = s.tokens * s.model.top_k  # about the rows of each owner at EP 2 (uniform)
    M = np.ceil(rows / 2048)
    per_owner = pull_scan_chunks(s, scan, np.full((1, 2), M), np.array([[16.0]]))
    assert per_owner == pytest.approx(np.full((1, 2), M * np.ceil(rows / M / 16 / 16)), abs=M)
    added, with_scan = {}, {}
    for engine in ("analytic", "sim"):
        for dispatch, combine in (("push", "push"), ("push", "pull"), ("pull", "pull"),
                                  ("pull", "push")):
            for sms in (16, 32):
                cfg = Config(dispatch=dispatch, combine=combine, minibatch=2048, comm_sms=sms,
                             macrobatch=131072, capacity=1.0)
                t0, t1 = (predict(s, cfg, params=p, engine=engine).latency_ms for p in (base, scan))
                added[engine, dispatch, combine, sms] = t1 - t0
                with_scan[engine, dispatch, combine, sms] = t1
        a = {k[1:]: v for k, v in added.items() if k[0] == engine}
        assert a["pull", "push", 16] == pytest.approx(0.0, abs=1e-9)
        assert a["pull", "push", 32] == pytest.approx(0.0, abs=1e-9)
        for modes in (("push", "pull"), ("pull", "pull")):
            assert a[modes + (16,)] > a[modes + (32,)] > 0, (engine, modes, a)
        assert a["push", "pull", 16] > a["pull", "pull", 16]  # both scans
        assert min(a["push", "push", 16], a["push", "push", 32]) > 0
    assert with_scan["analytic", "pull", "pull", 16] == pytest.approx(
        with_scan["sim", "pull", "pull", 16], rel=0.05)


@pytest.mark.parametrize("model,ep,tokens,comm_sms", [("llama4-maverick", 32, 1024, 64),
                                                     ("deepseek-v3", 8, 1024, 64),
                                                     ("llama4-maverick", 8, 2048, 32)])
def test_shared_expert_tiles_run_on_the_joined_sms_in_both_engines(model, ep, tokens, comm_sms):
    """Push combine from the epilogue: comm SMs join the compute once the dispatch ends and take
    the shared expert's remaining tiles too (mok_kernels/megakernel.py: one work counter). The
    analytic in-order and epilogue-store chains once charged the shared expert on the compute
    SMs alone (52%, 3% and 12% above the simulator on these workloads); both engines agree now."""
    from calibration.cli import priors_for

    p = priors_for("h200-1")
    scn = Scenario(load_hardware("h200-1"), load_model(model), ep, tokens)
    cfg = Config(dispatch="pull", combine="push", minibatch=2048, comm_sms=comm_sms)
    a = predict(scn, cfg, "mok", p).latency_ms
    s = predict(scn, cfg, "mok", p, "sim").latency_ms
    assert a == pytest.approx(s, rel=0.015)


@pytest.mark.parametrize("lag", [1, 2, 4])
def test_compute_walks_the_kernels_list_with_its_lag(tmp_path, lag):
    """With list_lag L the simulated compute SMs take minibatch i's down after minibatch i+L's
    gate/up (mok_kernels/megakernel.py's work list), and the last L downs at the end."""
    import dataclasses

    h200 = load_hardware("h200-1")
    s = dataclasses.replace(Scenario(h200, load_model("qwen3-30b-a3b"), 8, 1024), list_lag=lag)
    f = tmp_path / "t.json"
    simulate(s, Config(minibatch=1024, comm_sms=32, macrobatch=131072, capacity=1.0), "mok",
             load_params(None, "h200-1"), trace=f)
    ev = [e for e in json.loads(f.read_text())["traceEvents"]
          if e["pid"] == 0 and e["ph"] == "X" and e["name"].split(" mb")[0] in ("gate_up+swiglu", "down")]
    order = [("gu" if e["name"].startswith("gate") else "dn", int(e["name"].split(" mb")[1]))
             for e in sorted(ev, key=lambda e: e["ts"])]
    m = sum(k == "gu" for k, _ in order)
    want = []
    for i in range(m):
        want.append(("gu", i))
        if i - lag >= 0:
            want.append(("dn", i - lag))
    want += [("dn", j) for j in range(max(m - lag, 0), m)]
    assert m > 6 and order == want


def test_few_comm_sms_cannot_copy_faster_than_their_rate_in_the_simulator():
    """One H200 emulating rank 0 of qwen3-30b at EP 16, 1,024 tokens, pull / pull, 8 comm SMs
    (a measured space-sweep setting, 0.49-0.50 ms): the dispatch and combine copies, about 0.21 ms
    each on the comm SMs, bound the pass. The simulator's comm SMs may not be busier than the
    pass is long (but for the MERGE_SHARE of a copy the recomputation window may still free
    early: 0.99 of it now), and with no overlap left to model it agrees with the analytic
    model (sim / analytic 0.96; exact recomputation 0.97). Before
    session 31 its flow-recomputation window freed each 3-6 us copy up to 4 us early: 0.425 ms
    of comm-SM work in a 0.316 ms pipeline, the pass 25% faster than the analytic model."""
    s = Scenario(load_hardware("h200-1"), load_model("qwen3-30b-a3b"), 16, 1024)
    cfg = Config(dispatch="pull", combine="pull", minibatch=2048, comm_sms=8, capacity=1.0)
    # the copy rate this regime was read with (session 31), not each refit's: copies that bind
    p = load_params(None, "h200-1").with_values(copy_gbps_per_sm=19.9,
                                                copy_slowdown_beside_gemm=0.0)
    from mok_model.sim.network import merge_time
    m = MokSim(s, p, cfg, merge_s=merge_time(s))
    m.run()
    assert m.pipe_end[0] >= 0.98 * m.sm[0].busy_s, (m.pipe_end[0], m.sm[0].busy_s)
    a, b = analytic_mok(s, cfg, p).latency_ms, simulate(s, cfg, "mok", p).latency_ms
    assert abs(b / a - 1) < 0.05, (a, b)


def test_narrow_experts_at_ep8_keep_their_links_busy_in_the_simulator():
    """h200-hgx8, qwen3-30b-a3b, EP 8, 4,096 tokens (pull / push, minibatch 2,048, 12 comm SMs):
    the exchanges outlast the GEMMs. With one peer's copy at a time a GPU waited on whichever
    peer's link out its own combine burst held, the ports were busy 67 % of the pass and the
    simulator read 36 % above the analytic engine; with a minibatch's copies from every peer at
    once (as the kernel's programs take them) 10 % (docs/sim-study.md "M")."""
    s = Scenario(load_hardware("h200-hgx8"), load_model("qwen3-30b-a3b"), 8, 4096)
    cfg = Config(dispatch="pull", combine="push", minibatch=2048, comm_sms=12, macrobatch=34816,
                 capacity=0.25)
    a, b = predict(s, cfg, "mok"), predict(s, cfg, "mok", engine="sim")
    pipe = b.breakdown_ms["pipeline_fill"] + b.breakdown_ms["steady_state"] + b.breakdown_ms["pipeline_drain"]
    assert b.work_ms["link_ingress"] >= 0.8 * pipe, (b.work_ms, pipe)
    assert 1.0 <= b.latency_ms / a.latency_ms < 1.15, (a.latency_ms, b.latency_ms)


def test_sources_rotated_spread_the_slices_the_rank_order_crowds():
    """One expert per GPU (kimi-k2 with 32 experts at EP 32, MXFP8, 2,048 tokens, GB300, the
    tuner's knobs): with each expert's rows sorted by source rank (our kernel's schedule) every
    GPU's minibatch k comes from the same few sources and all read their links out at once; the
    simulator reads the pass 2.3x as long as with each GPU's sources starting after itself (the
    what-if source_order_rotated 1), where it agrees with the analytic engine (docs/sim-study.md
    "N")."""
    from mok_model.analytic import source_orders

    assert (source_orders(4, False) == np.arange(4)).all()
    assert source_orders(4, True).tolist() == [[1, 2, 3, 0], [2, 3, 0, 1], [3, 0, 1, 2], [0, 1, 2, 3]]
    s = Scenario(GB300, KIMI.with_(routed_experts=32), 32, 2048, "fwd", "mxfp8")
    cfg = predict(s, None, "mok", P_GB300).config
    rank, rot = (P_GB300.with_values(source_order_rotated=v) for v in (0.0, 1.0))
    by_rank = predict(s, cfg, "mok", rank, "sim").latency_ms
    rotated = predict(s, cfg, "mok", rot, "sim").latency_ms
    assert by_rank > 1.5 * rotated, (by_rank, rotated)
    assert abs(rotated / predict(s, cfg, "mok", rot).latency_ms - 1) < 0.05
    # the analytic engine's fill sees the first slice only: rotated, its hotspot is gone
    assert (predict(s, cfg, "mok", rot).breakdown_ms["pipeline_fill"]
            < predict(s, cfg, "mok", rank).breakdown_ms["pipeline_fill"])


def test_a_home_with_no_rows_in_a_minibatch_still_scans_its_chunks():
    """Our pull combine across GPUs: every home's comm programs scan all of each owner
    minibatch's chunks for their rows. A minibatch's rows come from one or two sources (sorted by
    expert, then source), so at small minibatches most homes hold none of its rows; before
    session 50 the simulator charged the scan only to homes that did, and read h200-hgx8
    qwen3-30b-a3b EP 8, minibatch 256, pull / pull 44 % below the analytic engine (1.34 against
    2.40 ms)."""
    s = scn(hw=load_hardware("h200-hgx8"), ep=8, tokens=2048, model=load_model("qwen3-30b-a3b"))
    cfg = Config(dispatch="pull", combine="pull", minibatch=256, comm_sms=32, macrobatch=10 ** 6,
                 capacity=1.0)
    sim = MokSim(s, load_params(None, "h200-hgx8"), cfg)
    assert sim.owner_walk and sim.pull_scan
    homes = [int(np.count_nonzero(r)) for r in sim.plan.rows[0]]
    assert np.mean(homes) < 4  # a minibatch holds rows of few of the 8 homes
    sim.run()
    # every home whose last rows are not in the last owner's last minibatch ends on scans
    assert (sim.walk_end > 0).sum() >= s.ep - 1
    a = predict(s, cfg).latency_ms
    assert predict(s, cfg, engine="sim").latency_ms == pytest.approx(a, rel=0.15)
