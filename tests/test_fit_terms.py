"""Terms the real 2-GPU fit added (docs/calibration.md, "Real 2-GPU runs"): tile time that grows
with a tile's valid rows, the library grouped GEMM of the unfused baselines (fitted to gemm-only
records), one host cost per torch.distributed collective; and older parameter files, which lack
these parameters, loading with their priors and saying so."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest

from calibration.fit_gemm import FREE, fit_library_gemm, gemm_only_ms
from calibration.priors import COMMON
from mok_model.analytic import expert_ffn_time, tile_fill_factor
from mok_model.errors import MokInputError
from mok_model.params import ADDED, BOUNDS, PARAMS_DIR, load_params, read_params
from mok_model.predict import predict
from mok_model.presets import load_hardware, load_model
from mok_model.scenario import Config, Scenario

CFG = Config(dispatch="pull", combine="push", minibatch=2048, comm_sms=32, macrobatch=131072,
             capacity=1.0)


def h200(model="kimi-k2", tokens=1024, **kw) -> Scenario:
    return Scenario(load_hardware("h200-hgx8"), load_model(model), 2, tokens, **kw)


def test_added_parameters_have_bounds_and_are_the_priors():
    for name, (value, source) in ADDED.items():
        lo, hi = BOUNDS[name]
        assert lo <= value <= hi and source
        assert COMMON[name] == (value, source)  # fits start from the same prior


def _older_file(tmp_path, drop):
    doc = json.loads((PARAMS_DIR / "h200-hgx8.json").read_text())
    doc = copy.deepcopy(doc)
    for name in drop:
        doc["values"].pop(name, None)
    path = tmp_path / "old.json"
    path.write_text(json.dumps(doc))
    return path


def test_older_file_loads_with_the_priors_and_says_so(tmp_path):
    path = _older_file(tmp_path, ADDED)
    p = read_params(path)
    assert set(p.filled) == set(ADDED)
    for name, (value, source) in ADDED.items():
        assert p[name] == value
        assert str(path) in p.sources[name] and source in p.sources[name]
    pred = predict(h200(), CFG, "mok", p)
    assert any("lacks" in n and all(name in n for name in ADDED) for n in pred.notes())
    # a copy with a filled value changed no longer calls it filled
    q = p.with_values(gemm_row_share=0.2)
    assert "gemm_row_share" not in q.filled and q.filled


def test_file_missing_an_original_parameter_is_still_refused(tmp_path):
    with pytest.raises(MokInputError, match="gemm_eff"):
        read_params(_older_file(tmp_path, ["gemm_eff"]))


def test_shipped_files_lack_nothing():
    for name in ("h200-hgx8", "gb300-nvl72", "h200-1"):
        assert load_params(None, name).filled == ()


def test_tile_fill_factor():
    p = load_params(None, "h200-hgx8").with_values(gemm_row_share=0.3)
    assert tile_fill_factor(p, 128 * 5, 5) == pytest.approx(1.0)  # full tiles
    assert tile_fill_factor(p, 0, 5) == pytest.approx(0.7)  # empty tiles: the fixed share
    f = tile_fill_factor(p, np.array([8.0, 32.0, 64.0, 128.0]), 1)
    assert np.all(np.diff(f) > 0)
    assert tile_fill_factor(p.with_values(gemm_row_share=0.0), 8, 1) == 1.0


def test_row_share_shortens_partly_filled_tiles_only():
    from calibration.priors import HOPPER, prior_params
    s = h200(tokens=4096)   # ~85 rows per expert: partly filled tiles, above the weights' HBM floor
    # the priors, not the shipped fit: the regime the test needs must not move with each refit
    base = prior_params("h200-hgx8", HOPPER).with_values(gemm_row_share=0.0)
    more = base.with_values(gemm_row_share=0.5)
    part = [expert_ffn_time(s, q, 8 * 100, 100, 0, 100, 2048) for q in (base, more)]
    full = [expert_ffn_time(s, q, 128 * 100, 100, 0, 100, 2048) for q in (base, more)]
    assert part[1] == pytest.approx((0.5 + 0.5 / 16) * part[0]) and full[1] == pytest.approx(full[0])
    lat = [predict(s, CFG, "mok", q).latency_ms for q in (base, more)]
    assert lat[1] < lat[0]


def test_library_gemm_is_the_baselines_not_the_megakernels():
    s = h200()
    p = load_params(None, "h200-hgx8")
    q = p.with_values(torch_gemm_eff=p["torch_gemm_eff"] / 2, torch_hbm_eff=p["torch_hbm_eff"] / 2)
    assert predict(s, None, "nccl-torch", q).latency_ms > predict(s, None, "nccl-torch", p).latency_ms
    assert predict(s, CFG, "mok", q).latency_ms == predict(s, CFG, "mok", p).latency_ms
    assert predict(s, None, "deepep", q).latency_ms == predict(s, None, "deepep", p).latency_ms


@pytest.mark.parametrize("engine", ["analytic", "sim"])
def test_collective_host_cost_lengthens_nccl_torch(engine):
    s = h200(tokens=256)
    p = load_params(None, "h200-hgx8").with_values(nccl_collective_us=0.0)
    q = p.with_values(nccl_collective_us=200.0)
    a = predict(s, None, "nccl-torch", p, engine)
    b = predict(s, None, "nccl-torch", q, engine)
    one = 200.0 * p["host_launch_scale"] * 1e-3  # ms: the count exchange's call before the sync
    assert b.breakdown_ms["host_sync"] - a.breakdown_ms["host_sync"] == pytest.approx(one)
    assert b.latency_ms >= a.latency_ms + one - 1e-9
    assert predict(s, CFG, "mok", q, engine).latency_ms == predict(s, CFG, "mok", p, engine).latency_ms


def _gemm_record(model, tokens, routing, ms):
    return {"system": "gemm-only", "id": f"g-{model}-{tokens}-{routing}", "model": model,
            "ep": 2, "tokens": tokens, "pass": "fwd", "precision": "bf16",
            "hardware": {"preset": "h200-hgx8"}, "emulated_peers": False,
            "routing": {"kind": routing, "arg": 1.2, "seed": 0} if routing == "zipf"
            else {"kind": routing, "seed": 0},
            "config": {}, "latency_ms": {"median": ms}}


def test_gemm_only_of_an_emulated_rank_is_rank_0s_not_the_slowest():
    """One GPU emulating EP 8 (h200-1) times rank 0's GEMMs (mok bench --rank 0); real GPUs
    (h200-hgx8) the slowest rank's. This zipf draw gives rank 0 11,511 rows and the busiest
    33,487: the emulated prediction is about a third of the real group's."""
    p = load_params(None, "h200-1")
    for routing, lo, hi in (("zipf", 0.3, 0.45), ("uniform", 0.98, 1.0)):
        real = _gemm_record("qwen3-235b-a22b", 2048, routing, 1.0) | {"ep": 8}
        emu = real | {"hardware": {"preset": "h200-1"}, "emulated_peers": True}
        assert lo <= gemm_only_ms(emu, p) / gemm_only_ms(real, p) <= hi


@pytest.mark.parametrize("truth", [(0.65, 0.62), (0.5, 0.8)])
def test_library_gemm_fit_recovers_known_parameters(truth):
    """gemm-only records generated from known efficiencies over few and many rows per expert;
    the fit recovers both (exactly, without noise)."""
    p = load_params(None, "h200-hgx8")
    true = p.with_values(**dict(zip(FREE, truth)))
    recs = [_gemm_record(m, n, r, 1.0) for m in ("kimi-k2", "qwen3-235b-a22b")
            for n in (256, 1024, 8192) for r in ("uniform", "zipf")]
    for r in recs:
        r["latency_ms"]["median"] = gemm_only_ms(r, true)
    got = fit_library_gemm(recs, p)
    for f, v in zip(FREE, truth):
        assert got.params[f] == pytest.approx(v, rel=1e-3)
    assert max(abs(r["rel_error"]) for r in got.residuals) < 1e-6
