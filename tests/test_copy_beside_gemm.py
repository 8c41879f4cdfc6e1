"""Comm SMs copy slower while GEMMs run beside them (copy_slowdown_beside_gemm), in both engines,
and forward push/push records of the kernel with runtime mode words are not today's kernel."""

from __future__ import annotations

import numpy as np
import pytest

from mok_model.analytic import copy_beside_gemm
from mok_model.params import load_params
from mok_model.predict import predict
from mok_model.presets import load_hardware, load_model
from mok_model.records import model_records, runtime_mode_words
from mok_model.scenario import Config, Scenario

# seed 14's regret case (calibration/drawn_shapes/seed14/syn14-h3328-i1280-e256-k7-s1.toml): at
# 8 comm SMs the dispatch is as long as the GEMMs, at 32 a quarter of them (on the copy loop of
# its runs, "ahead": today's copies, 1.25x faster, end before the GEMMs do)
SHAPE = "calibration/drawn_shapes/seed14/syn14-h3328-i1280-e256-k7-s1.toml"


def scn() -> Scenario:
    return Scenario(load_hardware("h200-1"), load_model(SHAPE), 16, 6144, copy_loop="ahead")


def cfg(comm_sms: int) -> Config:
    return Config(dispatch="pull", combine="push", minibatch=4096, comm_sms=comm_sms,
                  macrobatch=131072, capacity=1.0)


def test_copy_factor_inside_and_beyond_the_gemms():
    s = 0.2
    assert copy_beside_gemm(np.array([1.0]), np.array([5.0]), 0.0)[0] == 1.0
    # a copy that ends inside the GEMMs runs slowed throughout
    assert copy_beside_gemm(np.array([1.0]), np.array([5.0]), s)[0] == pytest.approx(1 / (1 - s))
    # a longer one only while they run
    assert copy_beside_gemm(np.array([10.0]), np.array([2.0]), s)[0] == pytest.approx(1 + s * 0.2)
    # continuous where the slowed copy just fits
    edge = copy_beside_gemm(np.array([(1 - s) * 3.0]), np.array([3.0]), s)[0]
    assert edge * (1 - s) * 3.0 == pytest.approx(3.0)
    assert copy_beside_gemm(np.array([0.0]), np.array([3.0]), s)[0] == 1.0


@pytest.mark.parametrize("engine", ["analytic", "sim"])
def test_slowdown_costs_where_the_copy_nears_the_gemms(engine):
    """The regret case: with the slowdown, 8 comm SMs (dispatch as long as the GEMMs) pay, 32
    (dispatch a quarter of them, hidden even when slowed) hardly do."""
    # the copy rate of the fit this regime was read with (session 38), not each refit's
    p0 = load_params(None, "h200-1").with_values(copy_gbps_per_sm=19.9,
                                                 copy_slowdown_beside_gemm=0.0)
    p1 = p0.with_values(copy_slowdown_beside_gemm=0.15)
    t = {(c, s): predict(scn(), cfg(c), "mok", p, engine=engine).latency_ms
         for c in (8, 32) for s, p in ((0, p0), (1, p1))}
    assert t[8, 1] > 1.05 * t[8, 0]
    assert t[32, 1] < 1.02 * t[32, 0]
    assert t[8, 1] > t[32, 1]


def _rec(dispatch, combine, software=None, pass_="fwd"):
    return {"system": "mok", "source": "measured", "pass": pass_, "precision": "bf16",
            "config": {"dispatch": dispatch, "combine": combine},
            "software": software or {"torch": "2.11"}}


def test_runtime_mode_words_are_old_push_push_forward_only():
    assert runtime_mode_words(_rec("push", "push"))
    assert not runtime_mode_words(_rec("push", "push", {"kernel_source": "0123456789abcdef"}))
    assert not runtime_mode_words(_rec("pull", "push"))
    assert not runtime_mode_words(_rec("push", "pull"))
    assert not runtime_mode_words(_rec("push", "push", pass_="bwd"))


def test_model_records_skip_old_push_push_with_a_note():
    from mok_model.records import read_records

    path = "calibration/runs/h200_drawn/drawn14.jsonl.gz"
    recs = read_records([path])
    kept, notes = model_records(recs)
    old = [r for r in recs if runtime_mode_words(r)]
    assert old and not any(runtime_mode_words(r) for r in kept)
    assert any("runtime mode words" in n for n in notes)
    assert any(r["config"]["dispatch"] == "pull" and r["config"]["combine"] == "push" for r in kept)


def test_pull_combine_records_of_the_first_dn_blocks_kernel_are_superseded():
    """Seed 17's six pull-combine records with 2 down blocks an item timed the kernel whose
    release per block stalled the loop (records.pull_block_barriers): another variant, left out of
    validation with a note; its push-combine records, and its pull-combine ones of one block an
    item, are today's kernel."""
    from mok_model.records import (default_variant, pull_block_barriers, read_records,
                                   superseded_kernel, variant_label)

    recs = [r for r in read_records(["calibration/runs/h200_drawn/drawn17_blocks.jsonl.gz"])
            if r["system"] == "mok"]
    old = [r for r in recs if pull_block_barriers(r)]
    assert len(old) == 6 and all(superseded_kernel(r) and not default_variant(r) for r in old)
    assert all(r["config"]["combine"] == "pull" and r["tiles"]["dn_blocks"] == 2 for r in old)
    assert "release per down block" in variant_label(old[0])
    kept, notes = model_records(recs)
    assert not any(pull_block_barriers(r) for r in kept)
    assert any(r["config"]["combine"] == "pull" for r in kept)   # one block an item: today's
    assert any(r.get("tiles", {}).get("dn_blocks") == 2 for r in kept)   # push combine
    assert notes
