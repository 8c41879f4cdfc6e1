"""Push vs pull dispatch from signalling costs (issue 11 point 4), and the published NVL72
communication figures the fabric model must predict without being fitted on them (point 7)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from calibration.published_comm import RUNS, check, expected_bytes, published_comm_records
from mok_model.params import PARAMS_DIR, load_params
from mok_model.predict import predict
from mok_model.presets import load_hardware
from mok_model.records import read_records
from mok_model.scenario import Config, Scenario
from studies.push_vs_pull import COMM_SMS, crossover_ep, kimi_layer, shared_us

P = load_params(None, "gb300-nvl72")


def _layer_ms(scn: Scenario, mode: str, params=P) -> float:
    cfg = Config(dispatch=mode, combine="push", minibatch=4096, comm_sms=COMM_SMS)
    return predict(scn, cfg, "mok", params, "analytic").latency_ms


@pytest.mark.parametrize("ep", [32, 64])
@pytest.mark.parametrize("tokens", [1, 8])
def test_pull_beats_push_at_few_tokens_by_the_signalling_margin(ep, tokens):
    """One minibatch: push's wait, (P-1) x per_peer + remote, hides behind the shared expert
    only up to its length; pull waits for a local counter. The layer gap must be at least that
    excess (less 10% for the round trip of pull's reads), and not much more."""
    scn = kimi_layer("gb300-nvl72", ep, tokens, 0)
    push, pull = _layer_ms(scn, "push"), _layer_ms(scn, "pull")
    wait_us = (ep - 1) * P["push_signal_per_peer_us"] + P["signal_remote_us"]
    margin_us = wait_us - max(shared_us(scn, P), P["signal_local_us"])
    assert margin_us > 5.0, "the mechanism's margin must be material here"
    gap_us = (push - pull) * 1e3
    assert 0.9 * margin_us <= gap_us <= 1.1 * margin_us + 3.0 * (ep - 1) * P["push_signal_per_peer_us"], \
        (gap_us, margin_us)


def test_push_and_pull_tie_when_signalling_is_free_or_hidden():
    """The gap comes from the signalling parameters: with a per-peer cost of zero and a remote
    signal as cheap as a local one, push and pull agree at few tokens (up to the read round
    trip); at EP 8 the push wait hides behind the shared expert with the shipped values."""
    scn = kimi_layer("gb300-nvl72", 64, 8, 0)
    free = P.with_values(push_signal_per_peer_us=0.0, signal_remote_us=P["signal_local_us"])
    assert abs(_layer_ms(scn, "push", free) - _layer_ms(scn, "pull", free)) < 2e-3  # < 2 us
    small = kimi_layer("gb300-nvl72", 8, 8, 0)
    assert abs(_layer_ms(small, "push") / _layer_ms(small, "pull") - 1) < 1e-3


def test_push_gap_grows_with_ep_and_the_formula_crossover_matches():
    gaps = [_layer_ms(kimi_layer("gb300-nvl72", ep, 8, 0), "push")
            - _layer_ms(kimi_layer("gb300-nvl72", ep, 8, 0), "pull") for ep in (8, 16, 32, 64)]
    assert all(b > a for a, b in zip(gaps, gaps[1:])), gaps
    sh = shared_us(kimi_layer("gb300-nvl72", 16, 8, 0), P)
    x = crossover_ep(P["push_signal_per_peer_us"], P["signal_remote_us"], P["signal_local_us"], sh)
    assert 8 < x < 32  # EP 8 ties, EP 32 is past it (the tests above)


def test_compute_bound_pass_hides_push_signalling_inside_one_rack():
    """8,192 tokens at EP 16: the routed GEMMs of each minibatch outlast its push wait."""
    scn = kimi_layer("gb300-nvl72", 16, 8192, 0)
    assert abs(_layer_ms(scn, "push") / _layer_ms(scn, "pull") - 1) < 1e-3


# ------------------------------------------------------------- published NVL72 communication
def test_published_comm_records_are_the_cited_table_and_never_fitted_on():
    recs = read_records([RUNS])
    assert len(recs) == 58
    fresh = published_comm_records()
    assert [r["id"] for r in recs] == [r["id"] for r in fresh]
    for r, f in zip(recs, fresh):
        assert r["source"] == "published" and "README_Hybrid-EP.md" in r["note"]
        assert r["value"]["gbps"] == f["value"]["gbps"]
        # the derived latency is the expected received bytes over the published bandwidth
        assert r["latency_ms"]["median"] == pytest.approx(expected_bytes(r["ep"]) / r["value"]["gbps"] / 1e6,
                                                          rel=1e-3)
    for f in PARAMS_DIR.glob("*.json"):
        assert not any("nvl72_comm" in x for x in json.loads(f.read_text())["fitted_on"]), f


def test_fabric_model_predicts_published_hybridep_bandwidth():
    """HybridEP kernel-only figures (the fabric without host overheads): the model is faster than
    published on every one (it has no per-flow switch contention and no reduction in the combine);
    errors as stated in docs/calibration.md: dispatch mean 12.5% (max 16.2%), combine 19.2%
    (max 25.7%); the 15% goal is met by the dispatch on average only."""
    rows = check(read_records([RUNS]), load_params(None, "gb200-nvl72"))
    by = {}
    for r in rows:
        by.setdefault((r["system"], r["measured"]), []).append(r["time_error"])
    disp = np.array(by[("hybridep-dispatch", "kernel")])
    comb = np.array(by[("hybridep-combine", "kernel")])
    assert len(disp) == len(comb) == 10
    assert np.all(disp < 0) and np.all(comb < 0)  # predicted time shorter than published
    assert np.mean(np.abs(disp)) < 0.135 and np.max(np.abs(disp)) < 0.17
    assert np.mean(np.abs(comb)) < 0.20 and np.max(np.abs(comb)) < 0.27
    # the trend with EP is the published one: bandwidth falls from EP 8 to EP 36
    pub = {r["ep"]: r["published_gbps"] for r in rows if r["system"] == "hybridep-dispatch"
           and r["measured"] == "kernel" and r["sms"] == 16}
    pred = {r["ep"]: r["predicted_gbps"] for r in rows if r["system"] == "hybridep-dispatch"
            and r["measured"] == "kernel" and r["sms"] == 16}
    assert pub[36] < pub[8] and pred[36] < pred[8]


def test_baseline_deepep_exchange_is_too_fast_at_few_sms():
    """What the published DeepEP GB200 figures say about the baselines' DeepEP term: its per-SM
    copy rate (50 GB/s, DeepEP v2's formula) saturates the link with 16 SMs, where DeepEP's
    published Torch API dispatch reaches 329-362 GB/s: the model is 40-46% too fast there.
    Fails when the baseline's DeepEP term is fixed (then update docs/calibration.md)."""
    rows = check(read_records([RUNS]), load_params(None, "gb200-nvl72"))
    d16 = [r["time_error"] for r in rows if r["system"] == "deepep-dispatch" and r["sms"] == 16]
    assert len(d16) == 3 and all(e < -0.35 for e in d16)


def test_published_figures_name_their_hardware_preset():
    for r in read_records([RUNS]):
        hw = load_hardware(r["hardware"]["preset"])
        assert hw.domain_size >= r["ep"]  # one NVLink domain
