"""How the baselines' dispatch/combine kernels move rows (mok_model/baselines.py COMM_KERNELS):
each mechanism checked against its source (the H200 NVLink measurements, the kernels' design)."""

from __future__ import annotations

import numpy as np
import pytest

from calibration.fit_fabric import fit_sweep
from calibration.published_comm import RUNS, predict_gbps, scenario_for
from mok_model.analytic import US
from mok_model.baselines import (COMM_KERNELS, PULL_LINK_SHARE, PUSH_GBPS_PER_SM, _exchange,
                                 api_buffer_copy, copy_gbps)
from mok_model.params import load_params
from mok_model.records import read_records
from mok_model.predict import predict
from mok_model.sim import simulate

H200X2 = ["calibration/runs/h200x2/nvlink_micro_full.jsonl",
          "calibration/runs/h200x2/nvlink_micro_quick.jsonl"]
GB200 = load_params(None, "gb200-nvl72")


def _rec(system: str, how: str, ep: int, sms: int) -> dict:
    return next(r for r in read_records([RUNS]) if r["system"] == system and r["measurement"] == how
                and r["ep"] == ep and r["config"]["comm_sms"] == sms)


def _rows(ep: int = 8):
    scn = scenario_for(_rec("hybridep-dispatch", "kernel", ep, 16))
    from mok_model.analytic import loads
    ld = loads(scn)
    return scn, ld.dedup_in.astype(float), ld.dedup_out.astype(float), 2.0 * scn.model.hidden


def test_constants_are_the_h200_measurements():
    """PUSH_GBPS_PER_SM and PULL_LINK_SHARE are what the committed records say."""
    recs = read_records(H200X2)
    push = [r for r in recs if r["system"] == "micro-nvlink-copy" and r["metrics"]["direction"] == "push"]
    rate, _, _ = fit_sweep(push)
    assert rate == pytest.approx(PUSH_GBPS_PER_SM, rel=1e-3)
    bidir = {"push": [], "pull": []}
    for r in recs:
        if r["system"] == "micro-nvlink-bidir":
            bidir[r["metrics"]["direction"]].append(r["metrics"]["bytes"] / r["latency_ms"]["median"])
    assert len(bidir["push"]) == len(bidir["pull"]) == 2
    assert sum(bidir["pull"]) / sum(bidir["push"]) == pytest.approx(PULL_LINK_SHARE, abs=5e-4)


def test_deepep_moves_rows_with_half_its_sms_at_the_push_rate():
    """DeepEP's even blocks send, odd blocks receive: below the link, its exchange takes the
    bytes over (SMs / 2) x the measured push rate, and doubling its SMs halves that part."""
    scn, rin, rout, row = _rows()
    assert copy_gbps(GB200, "deepep", 16) == pytest.approx(8 * PUSH_GBPS_PER_SM * 1e9)
    peers = (scn.ep - 1) * max(GB200["push_signal_per_peer_us"], scn.hardware.link_latency_us) * US
    t16 = _exchange(scn, GB200, row, rin, rout, 16, system="deepep") - peers
    t32 = _exchange(scn, GB200, row, rin, rout, 32, system="deepep") - peers
    expect = np.maximum(rin, rout) * row / (8 * PUSH_GBPS_PER_SM * 1e9)
    assert np.allclose(t16, expect) and np.allclose(t32, expect / 2)
    # HybridEP moves with all its SMs at the params' rate: link-bound at 16 SMs on GB200
    assert copy_gbps(GB200, "hybridep", 16) > scn.hardware.link_gbps * 1e9 * GB200["link_eff"]


def test_pulled_combine_is_slower_than_pushed_dispatch_by_the_measured_share():
    """HybridEP's combine loads the peers' rows; link-bound, its data part takes 1 / 0.917 of the
    dispatch's. DeepEP pushes both ways: equal."""
    scn, rin, rout, row = _rows()
    peers = (scn.ep - 1) * max(GB200["push_signal_per_peer_us"], scn.hardware.link_latency_us) * US
    d = _exchange(scn, GB200, row, rin, rout, 16, system="hybridep") - peers
    c = _exchange(scn, GB200, row, rout, rin, 16, system="hybridep", op="combine") - peers
    assert np.allclose(c / d, 1 / PULL_LINK_SHARE)
    dd = _exchange(scn, GB200, row, rin, rout, 16, system="deepep")
    dc = _exchange(scn, GB200, row, rout, rin, 16, system="deepep", op="combine")
    assert np.allclose(dd, dc)
    assert COMM_KERNELS["hybridep"].combine_pulls and not COMM_KERNELS["deepep"].combine_pulls


@pytest.mark.parametrize("system", ["deepep", "hybridep", "comet"])
def test_sm_driven_exchange_pays_one_signal_per_peer(system):
    """The fixed part of an SM-driven exchange is (P - 1) x push_signal_per_peer_us (never less
    than a hop); NCCL's stays one link latency per peer."""
    scn, rin, rout, row = _rows(16)
    slow = GB200.with_values(push_signal_per_peer_us=5.0)
    diff = _exchange(scn, slow, row, rin, rout, 16, system=system) - \
        _exchange(scn, GB200, row, rin, rout, 16, system=system)
    assert np.allclose(diff, 15 * (5.0 - GB200["push_signal_per_peer_us"]) * US)
    assert np.allclose(_exchange(scn, slow, row, rin, rout, None, 0.5),
                       _exchange(scn, GB200, row, rin, rout, None, 0.5))


def test_hybridep_torch_api_copies_its_buffer_and_deepep_does_not():
    """Halving HBM efficiency slows HybridEP's Torch API figure by exactly its buffer copy, leaves
    its kernel-only figure alone, and does not touch DeepEP."""
    slow = GB200.with_values(hbm_eff=GB200["hbm_eff"] / 2)
    h = _rec("hybridep-dispatch", "torch-api", 8, 16)
    a, b = predict_gbps(h, GB200), predict_gbps(h, slow)
    assert a["kernel_gbps"] == b["kernel_gbps"] and b["api_gbps"] < a["api_gbps"]
    scn = scenario_for(h)
    from mok_model.workload import traffic
    got = np.median(traffic(scn).dedup_rows.sum(0)) * 2.0 * scn.model.hidden  # uniform: all alike
    extra = got / (b["api_gbps"] * 1e9) - got / (a["api_gbps"] * 1e9)
    assert extra == pytest.approx(api_buffer_copy(scn, GB200, got, 1.0), rel=1e-6)
    d = _rec("deepep-dispatch", "torch-api", 8, 16)
    assert predict_gbps(d, GB200) == predict_gbps(d, slow)


def test_sim_and_analytic_agree_on_the_new_terms():
    """The simulator charges the same kernel terms: on GB200 at EP 8 both engines put DeepEP's
    combine (half of 24 SMs sending) above HybridEP's (link-bound, pulled), and their baseline
    latencies stay within 10% of each other."""
    from mok_model.presets import load_hardware, load_model
    from mok_model.scenario import Scenario
    scn = Scenario(load_hardware("gb200-nvl72"), load_model("kimi-k2"), 8, 4096)
    for system in ("deepep", "hybridep"):
        s, a = simulate(scn, None, system, GB200), predict(scn, None, system, GB200)
        assert abs(s.latency_ms / a.latency_ms - 1) < 0.10, system
    sh, sd = simulate(scn, None, "hybridep", GB200), simulate(scn, None, "deepep", GB200)
    ah, ad = predict(scn, None, "hybridep", GB200), predict(scn, None, "deepep", GB200)
    # DeepEP's 24 SMs, half sending, copy slower than the link: its exchanges are the slower ones
    assert sd.breakdown_ms["combine"] > sh.breakdown_ms["combine"]
    assert ad.breakdown_ms["combine"] > ah.breakdown_ms["combine"]
