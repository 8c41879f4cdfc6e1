"""Consistency of valid questions (session 52's pass): on hardware whose peers are emulated on one
GPU (h100-1, h200-1), MoK's latency is rank 0's pass, what one GPU measures; a baseline exchanges
with real peers, so its latency is the slowest GPU's in both engines, and the output says so.
(A change that took rank 0 for the baselines too made the simulator, whose rank 0 waits for the
busiest peer's rows, read up to 4.2x the analytic engine: reverted.)"""

from __future__ import annotations

import pytest

from mok_model.predict import predict, scenario_notes
from mok_model.presets import load_hardware, load_model
from mok_model.scenario import Scenario


def test_notes_say_whose_latency_it_is():
    s = Scenario(load_hardware("h100-1"), load_model("mixtral-8x7b"), 8, 64)
    assert any("the latency is rank 0's" in n for n in scenario_notes(s))
    note = " ".join(scenario_notes(s, "deepep"))
    assert "not emulated" in note and "slowest of the 8 GPUs" in note
    assert "rank 0's" not in predict(s, None, "deepep").notes()[0].split(";")[1]


@pytest.mark.parametrize("system", ["deepep", "hybridep", "nccl-torch"])
def test_emulated_baseline_engines_agree_on_skewed_routing(system):
    """The question where taking rank 0 split the engines (sim / analytic 4.2 for deepep)."""
    s = Scenario(load_hardware("h100-1"), load_model("kimi-k2"), 16, 2919, pass_="bwd",
                 routing="zipf:1.2")
    a = predict(s, None, system)
    b = predict(s, None, system, engine="sim")
    assert b.latency_ms / a.latency_ms == pytest.approx(1.0, abs=0.05)
