"""Consistency of valid questions (session 52's metamorphic pass): numbers that contradicted
each other or the text printed beside them."""

from __future__ import annotations

import math

import pytest

from mok_model.predict import predict, scenario_notes
from mok_model.presets import load_hardware, load_model
from mok_model.scenario import Scenario


@pytest.mark.parametrize("engine", ["analytic", "sim"])
@pytest.mark.parametrize("system", ["nccl-torch", "deepep", "hybridep", "comet"])
def test_emulated_baseline_is_rank_0s_pass(system, engine):
    """On hardware whose peers are emulated on one GPU (h100-1, h200-1) every prediction notes
    that the latency is rank 0's, as MoK's is in both engines; the baselines took the slowest
    of all ranks (`mok predict --hardware h100-1 --model mixtral-8x7b --ep 8 --tokens 64
    --system deepep`: slowest GPU 3)."""
    s = Scenario(load_hardware("h100-1"), load_model("mixtral-8x7b"), 8, 64)
    assert any("the latency is rank 0's" in n for n in scenario_notes(s))
    pred = predict(s, None, system, engine=engine)
    assert pred.slowest_gpu == 0
    assert pred.breakdown_ms["load_imbalance"] == 0.0
    assert math.isclose(sum(pred.breakdown_ms.values()), pred.latency_ms, rel_tol=1e-9)


def test_real_fabric_baseline_still_takes_the_slowest_gpu():
    s = Scenario(load_hardware("h200-hgx8"), load_model("mixtral-8x7b"), 8, 64, routing="zipf:1.2")
    pred = predict(s, None, "deepep")
    assert pred.slowest_gpu != 0 and pred.breakdown_ms["load_imbalance"] > 0
