"""How the baselines' dispatch/combine kernels move rows (mok_model/baselines.py COMM_KERNELS):
each mechanism checked against its source (the H200 NVLink measurements, the kernels' design)."""

from __future__ import annotations

import numpy as np
import pytest

from calibration.fit_fabric import fit_sweep
from calibration.published_comm import RUNS, predict_gbps, scenario_for
from mok_model.analytic import US
from mok_model import baselines
from mok_model.baselines import (COMM_KERNELS, DEEPEP_NVL_CHUNK, PULL_LINK_SHARE, PUSH_GBPS_PER_SM,
                                 RELEASE_IN_SERIES_US, _exchange, api_buffer_copy,
                                 chunk_handover_s, copy_gbps, deepep_chunk_tokens)
from mok_model.params import load_params
from mok_model.records import read_records
from mok_model.predict import predict
from mok_model.sim import simulate
from mok_model.workload import traffic

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
    # each further slot released in series: the slope of the signal round trip over the slots
    sig = [r for r in recs if r["system"] == "micro-nvlink-signal" and r["metrics"].get("peers")]
    slots = [float(r["metrics"]["peers"]) for r in sig]
    rt = [float(r["metrics"].get("roundtrip_us") or r["latency_ms"]["median"] * 1e3) for r in sig]
    assert len(set(slots)) >= 2
    assert np.polyfit(slots, rt, 1)[0] == pytest.approx(RELEASE_IN_SERIES_US, abs=5e-4)


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


def test_deepep_chunk_sizes_are_its_recommended_configs():
    """NVLink chunk tokens per rank count (deep_ep/buffer.py at 41cad94): the combine's are never
    larger than the dispatch's from 8 ranks on, one token at 24-128 ranks; unlisted counts take
    the next listed one up, past the table its last entry."""
    assert deepep_chunk_tokens(8, "dispatch") == 6 and deepep_chunk_tokens(8, "combine") == 4
    assert deepep_chunk_tokens(24, "combine") == 1 and deepep_chunk_tokens(24, "dispatch") == 8
    assert deepep_chunk_tokens(12, "combine") == DEEPEP_NVL_CHUNK[16][1]
    assert deepep_chunk_tokens(576, "dispatch") == DEEPEP_NVL_CHUNK[160][0]
    assert all(c <= d for r, (d, c) in DEEPEP_NVL_CHUNK.items() if r >= 8)
    assert COMM_KERNELS["deepep"].chunked and not COMM_KERNELS["hybridep"].chunked


def test_one_token_chunks_make_deepeps_24_rank_combine_handover_bound(monkeypatch):
    """At 24 ranks DeepEP's combine hands over one token per release: its data part is
    rows x 0.963 us / channels, so it halves when the SMs double and vanishes with the release
    cost; its dispatch (8-token chunks) and HybridEP (not chunked) do not move."""
    scn, rin, rout, row = _rows(24)
    own = np.diagonal(traffic(scn).dedup_rows)
    peers = (scn.ep - 1) * max(GB200["push_signal_per_peer_us"], scn.hardware.link_latency_us) * US

    def comb(sms, system="deepep"):
        return _exchange(scn, GB200, row, rout, rin, sms, system=system, op="combine", own=own) - peers

    floor = (np.maximum(rin, rout) + own) / 8 * RELEASE_IN_SERIES_US * US  # 16 SMs: 8 channels
    assert np.allclose(comb(16), floor) and np.allclose(comb(32), floor / 2)
    assert np.allclose(chunk_handover_s(scn, np.maximum(rin, rout) + own, 16, "combine"), floor)
    disp = _exchange(scn, GB200, row, rin, rout, 16, system="deepep", own=own)
    hyb = comb(16, "hybridep")
    monkeypatch.setattr(baselines, "RELEASE_IN_SERIES_US", 0.0)
    assert np.all(comb(16) < 0.5 * floor)
    assert np.allclose(_exchange(scn, GB200, row, rin, rout, 16, system="deepep", own=own), disp)
    assert np.allclose(comb(16, "hybridep"), hyb)


def test_sim_charges_the_same_chunk_handovers():
    """Both engines put DeepEP's combine at EP 24 (kimi-k2, 4,096 tokens, GB200) on its chunk
    handovers: within 2% of each other and over twice HybridEP's."""
    from mok_model.presets import load_hardware, load_model
    from mok_model.scenario import Scenario
    scn = Scenario(load_hardware("gb200-nvl72"), load_model("kimi-k2"), 24, 4096)
    s, a = simulate(scn, None, "deepep", GB200), predict(scn, None, "deepep", GB200)
    assert s.breakdown_ms["combine"] == pytest.approx(a.breakdown_ms["combine"], rel=0.02)
    h = predict(scn, None, "hybridep", GB200)
    assert a.breakdown_ms["combine"] > 2 * h.breakdown_ms["combine"]
