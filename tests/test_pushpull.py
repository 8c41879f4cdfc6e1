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


def _errors(rows) -> dict:
    by: dict = {}
    for r in rows:
        by.setdefault((r["system"], r["measured"]), []).append(r["time_error"])
    return {k: np.array(v) for k, v in by.items()}


def test_fabric_model_predicts_published_hybridep_bandwidth():
    """HybridEP figures, as stated in docs/calibration.md (2026-11-30): kernel-only dispatch mean
    10.3% (max 13.2%), combine 10.1% (max 16.8%); Torch API dispatch 4.7% (max 12.2%), combine
    6.9% (max 16.1%). The kernel-only predictions stay faster than published on every row."""
    rows = check(read_records([RUNS]), load_params(None, "gb200-nvl72"))
    e = _errors(rows)
    disp, comb = e[("hybridep-dispatch", "kernel")], e[("hybridep-combine", "kernel")]
    assert len(disp) == len(comb) == 10
    assert np.all(disp < 0) and np.all(comb < 0)  # predicted time shorter than published
    assert np.mean(np.abs(disp)) < 0.11 and np.max(np.abs(disp)) < 0.14
    assert np.mean(np.abs(comb)) < 0.11 and np.max(np.abs(comb)) < 0.175
    api_d, api_c = e[("hybridep-dispatch", "torch-api")], e[("hybridep-combine", "torch-api")]
    assert np.mean(np.abs(api_d)) < 0.06 and np.max(np.abs(api_d)) < 0.13
    assert np.mean(np.abs(api_c)) < 0.08 and np.max(np.abs(api_c)) < 0.17
    # the trends are the published ones: bandwidth falls from EP 8 to EP 36, and the (pulled)
    # combine is slower than the (pushed) dispatch at every EP and SM count
    def gbps(op, key):
        return {(r["ep"], r["sms"]): r[key] for r in rows
                if r["system"] == f"hybridep-{op}" and r["measured"] == "kernel"}
    for key in ("published_gbps", "predicted_gbps"):
        d, c = gbps("dispatch", key), gbps("combine", key)
        assert d[(36, 16)] < d[(8, 16)]
        assert all(c[x] < d[x] for x in d)


def test_deepep_dispatch_and_24_rank_combine_within_goal():
    """DeepEP's Torch API dispatch: within 15% on every row (half its SMs send at the measured
    push rate). Its combine at 24 ranks, published 2.4-2.8x slower than its dispatch, is within
    15% once each channel hands over its one-token chunks at the measured 0.963 us per release
    in series (docs/calibration.md; it was 60-64% too fast without). At 8 and 16 ranks (chunks of
    4 tokens, not binding) the combine stays too fast, by up to 25%: not modelled."""
    rows = check(read_records([RUNS]), load_params(None, "gb200-nvl72"))
    disp = _errors(rows)[("deepep-dispatch", "torch-api")]
    assert len(disp) == 9 and np.max(np.abs(disp)) < 0.15 and np.mean(np.abs(disp)) < 0.06
    c24 = [r["time_error"] for r in rows if r["system"] == "deepep-combine" and r["ep"] == 24]
    assert len(c24) == 3 and all(abs(e) < 0.15 for e in c24)
    c_small = [r["time_error"] for r in rows if r["system"] == "deepep-combine" and r["ep"] < 24]
    assert all(-0.25 < e < 0 for e in c_small)
    comb = _errors(rows)[("deepep-combine", "torch-api")]
    assert np.mean(np.abs(comb)) < 0.12


def test_published_figures_name_their_hardware_preset():
    for r in read_records([RUNS]):
        hw = load_hardware(r["hardware"]["preset"])
        assert hw.domain_size >= r["ep"]  # one NVLink domain
