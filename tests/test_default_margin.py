"""tuner.DEFAULT_MARGIN: the tuner keeps the published default knobs unless another setting is
predicted at least the margin faster (tune, tune_robust and `mok tune` alike)."""

from __future__ import annotations

import json

import pytest

from mok_model.cli import main
from mok_model.errors import MokInputError
from mok_model.params import load_params
from mok_model.presets import load_hardware, load_model
from mok_model.scenario import Scenario
from mok_model.tuner import DEFAULT_MARGIN, default_knobs, tune, tune_robust

KNOBS = ("dispatch", "combine", "minibatch", "comm_sms")


def knobs_of(scored) -> dict:
    return {k: getattr(scored.config, k) for k in KNOBS}


def test_default_knobs_scale_the_published_40_of_148_sms():
    assert default_knobs(148)["comm_sms"] == 40 and default_knobs(132)["comm_sms"] == 32
    assert default_knobs(132) == {"dispatch": "pull", "combine": "push", "minibatch": 4096,
                                  "comm_sms": 32}


def scenarios():
    """Workloads on both one-GPU presets, so that some keep the default and some do not."""
    for hw in ("h200-1", "h100-1"):
        for model, ep, tokens in (("deepseek-v3", 16, 4096), ("qwen3-30b-a3b", 8, 2048),
                                  ("kimi-k2", 8, 640), ("gpt-oss-120b", 16, 6144),
                                  ("qwen3-30b-a3b", 8, 256), ("qwen3-30b-a3b", 32, 64)):
            yield Scenario(load_hardware(hw), load_model(model), ep, tokens), load_params(None, hw)


def test_the_pick_is_the_default_unless_another_is_the_margin_faster():
    kept = moved = 0
    for scn, p in scenarios():
        raw = tune(scn, p, top=3, default_margin=0)
        r = tune(scn, p, top=3)
        d = tune(scn, p, fixed=default_knobs(scn.hardware.sms), top=1, default_margin=0).best
        assert r.best == r.top[0]
        if raw.best.latency_ms > d.latency_ms * (1 - DEFAULT_MARGIN) and knobs_of(raw.best) != knobs_of(d):
            kept += 1
            assert r.best == d and r.fastest == raw.best
            assert r.top[1] == raw.best             # the fastest listed next
        else:
            moved += 1
            assert r.best == raw.best and r.fastest is None
    assert kept and moved                            # both branches met


def test_a_fixed_knob_replaces_its_default():
    scn, p = next(scenarios())
    r = tune(scn, p, fixed={"minibatch": 1024}, top=1)
    assert r.best.config.minibatch == 1024
    raw = tune(scn, p, fixed={"minibatch": 1024}, top=1, default_margin=0).best
    d = tune(scn, p, fixed={**default_knobs(132), "minibatch": 1024}, top=1, default_margin=0).best
    assert r.best in (raw, d)
    assert r.best == (d if raw.latency_ms > d.latency_ms * (1 - DEFAULT_MARGIN) else raw)


def test_robust_keeps_the_default_within_the_margin_of_worst_regret():
    from dataclasses import replace

    kept = moved = 0
    for scn, p in scenarios():
        raw = tune_robust(scn, p, default_margin=0).best
        r = tune_robust(scn, p).best
        dk = default_knobs(scn.hardware.sms)
        d = tune_robust(scn, p, fixed=dk, default_margin=0).best

        def best(fixed, rt, scn=scn, p=p):
            return tune(replace(scn, routing=rt), p, fixed=fixed, top=1,
                        default_margin=0).best.latency_ms
        d_worst = max((1 + v) * best(dk, rt) / best(None, rt) for rt, v in d.regret.items())
        if knobs_of(raw) != dk and 1 + max(raw.regret.values()) > d_worst * (1 - DEFAULT_MARGIN):
            kept += 1
            assert knobs_of(r) == dk        # the ring may differ where rings tie
            assert max(r.regret.values()) == pytest.approx(d_worst - 1)
        else:
            moved += 1
            assert r == raw
    assert kept and moved


@pytest.mark.parametrize("margin", [-0.1, 1.0, "0.02", True, float("nan")])
def test_a_bad_margin_is_refused(margin):
    scn, p = next(scenarios())
    with pytest.raises(MokInputError, match="default_margin"):
        tune(scn, p, default_margin=margin)
    with pytest.raises(MokInputError, match="default_margin"):
        tune_robust(scn, p, default_margin=margin)


def test_mok_tune_says_when_it_kept_the_default(capsys):
    args = ["tune", "--hardware", "h100-1", "--model", "deepseek-v3", "--ep", "16", "--tokens",
            "4096"]
    assert main([*args, "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert main(args) == 0
    out = capsys.readouterr().out
    if d["default_kept_over"] is None:
        assert "published default knobs, kept" not in out
    else:
        assert {k: d["best"]["config"][k] for k in KNOBS} == default_knobs(132)
        assert d["default_kept_over"]["latency_ms"] < d["best"]["latency_ms"]
        assert "note: rank 1 is the published default knobs, kept" in out
