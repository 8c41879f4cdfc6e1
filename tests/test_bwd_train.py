"""The backward on the layer's training tiles (session 33): which records ran them, their pass
group "bwd-train", the model's switch (Scenario.bwd_tiles, `mok predict --bwd-tiles`) and its
fit on synthetic records (CPU)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from calibration.defaults import pass_files
from calibration.passes import PASS_FREE, fit_passes, held_out, pass_group, pass_records
from calibration.priors import H200_LOCAL, prior_params
from calibration.scoring import predict_records
from mok_model.analytic import ffn_pieces, mok_config_terms
from mok_model.heldout import group_key
from mok_model.predict import predict
from mok_model.presets import load_hardware, load_model
from mok_model.records import (DEFAULT_BWD, TRAINING_BWD, TRAINING_BWD_NARROW, read_records,
                               record_bwd_tiles, record_scenario, training_variant, workload_key)
from mok_model.scenario import Config, Scenario

REPO = Path(__file__).resolve().parents[1]
CFG = Config(dispatch="pull", combine="push", minibatch=4096, comm_sms=32, macrobatch=131072,
             capacity=1.0)
# the bench's spellings (benchmarks/device/s33_bwd_sweep.sh TRAIN and NARROW, with the fields
# mok_kernels/bench.py backward_tiles writes)
BENCH = {"a_fuse_gu": 1, "bk_rows": 64, "bk_x": 0, "bw": 0, "bw_h": 128, "diag": 0,
         "num_stages": 3, "num_warps": 8, "w_flat": 1, "w_tma": 0}
TRAIN = {**BENCH, "saved_gu": 1, "bn_a": 256, "a_epi": 128, "bn_x": 256, "w_direct": 1, "w_bf16": 1}
NARROW = {**TRAIN, "bn_a": 128, "a_epi": 0}


def h200(**changes):
    p = prior_params("h200-1", H200_LOCAL)
    return p.with_values(**changes) if changes else p


def scn(model="kimi-k2", tokens=4096, bwd_tiles="recompute", ep=8):
    return Scenario(load_hardware("h200-1"), load_model(model), ep, tokens, "bwd", "bf16",
                    bwd_tiles=bwd_tiles)


def record(model="kimi-k2", tokens=4096, tiles=None, system="mok", pass_="bwd", latency=10.0,
           rid=None, precision="bf16"):
    rec = {"schema": "mok-run/1", "id": rid or f"{system}-{model}-{tokens}-{json.dumps(tiles)}",
           "date": "2026-12-03T12:00:00+00:00",
           "hardware": {"preset": "h200-1", "gpu": "NVIDIA H200", "gpus": 1, "sms": 132,
                        "fabric": "local-hbm"}, "software": {}, "system": system, "model": model,
           "ep": 8, "emulated_peers": True, "tokens": tokens, "pass": pass_,
           "precision": precision,
           "config": {"dispatch": "pull", "combine": "push", "minibatch": 4096, "comm_sms": 32,
                      "macrobatch": 131072, "capacity": 1.0},
           "routing": {"kind": "uniform", "seed": 0}, "latency_ms": {"median": latency},
           "source": "measured", "note": ""}
    if tiles is not None:
        rec["tiles"] = tiles
    return rec


# ---- which records ran the training tiles ----

def test_the_variants_are_the_layers_training_tiles():
    """TRAINING_BWD is mok_kernels/backward.py TRAINING_TILES with w_bf16=1 (autograd's bf16
    parameters), the rest of BackwardTiles() as they are."""
    from mok_kernels.backward import TRAINING_TILES, parse_tiles
    t = parse_tiles(TRAINING_TILES + ",w_bf16=1")
    assert {k: int(getattr(t, k)) for k in TRAINING_BWD if k != "bw"} == \
        {k: v for k, v in TRAINING_BWD.items() if k != "bw"}
    assert TRAINING_BWD_NARROW == {**TRAINING_BWD, "bn_a": 128, "a_epi": 0}
    assert TRAINING_BWD != DEFAULT_BWD


@pytest.mark.parametrize("model, tiles, want", [
    ("kimi-k2", TRAIN, True),                           # I 2048: 256 divides it
    ("kimi-k2", NARROW, False),                         # the narrow A items where 256 divides I
    ("gpt-oss-120b", NARROW, True),                     # I 2880 padded to 2944: 256 does not
    ("gpt-oss-120b", TRAIN, True),                      # the kernel runs a_epi there as NARROW
    ("qwen3-next-80b-a3b", TRAIN, True),                # I 512
    ("kimi-k2", {**TRAIN, "w_bf16": 0}, False),         # fp32 weight gradients: another variant
    ("kimi-k2", {**TRAIN, "w_direct": 0, "w_bf16": 0}, False),
    ("kimi-k2", {**TRAIN, "diag": 1}, False),           # a timing diagnostic
    ("kimi-k2", {**TRAIN, "w_tma": 1}, False),
    ("kimi-k2", {**TRAIN, "saved_gu": 0, "a_epi": 0}, False),
    ("kimi-k2", BENCH, False),                          # the recomputing default's tiles
    ("kimi-k2", None, False),                           # a record without tiles
])
def test_training_variant(model, tiles, want):
    rec = record(model=model, tiles=tiles)
    assert training_variant(rec) is want
    assert record_bwd_tiles(rec) == ("training" if want else "recompute")
    assert pass_group(rec) == ("bwd-train" if want else "bwd")
    assert record_scenario(rec).bwd_tiles == record_bwd_tiles(rec)


def test_only_our_bf16_backward_records():
    for rec in (record(tiles=TRAIN, system="gemm-only"), record(tiles=TRAIN, pass_="fwd"),
                {**record(tiles=TRAIN), "source": "published"}):
        assert not training_variant(rec) and record_bwd_tiles(rec) == "recompute"
    # the two tiles are two workloads (a Scenario each), the FP8 kernel still last in the key
    a, b = workload_key(record(tiles=TRAIN)), workload_key(record(tiles=BENCH))
    assert a != b and a[-1] == b[-1] == "triton"


def test_a_registrations_plan_line_reads_as_the_run_it_plans(tmp_path):
    """A plan or prediction line has no `source`: its training tiles read as the training tiles
    (session 34: reading them as the recomputing default made the registration of
    h200_bwd_train_2026-12-03.jsonl predict the wrong kernel), the registered report pairs
    predictions with records of the same tiles only, and a plan of a tile variant the model does
    not read is refused."""
    from calibration.register import read_plan
    from calibration.registered import _run_key

    plan = {k: v for k, v in record(tiles=TRAIN).items() if k not in ("source", "id", "date")}
    assert training_variant(plan) and record_bwd_tiles(plan) == "training"
    assert _run_key(plan) == _run_key(record(tiles=TRAIN))
    assert _run_key(plan) != _run_key(record(tiles=BENCH))
    path = tmp_path / "plan.jsonl"
    path.write_text(json.dumps(plan) + "\n")
    assert read_plan(str(path), "h200-1")[0]["tiles"] == TRAIN
    path.write_text(json.dumps({**plan, "tiles": {**TRAIN, "bn_x": 64}}) + "\n")
    with pytest.raises(ValueError, match="training tiles for the shape only"):
        read_plan(str(path), "h200-1")


def test_the_groups_records():
    """The committed runs: the training-tile records form "bwd-train" (the six a_epi records of
    bwd_a_epi_s32.jsonl at least: kimi-k2 / glm-5 at 1,024-4,096 tokens), the recomputing
    group keeps its 116, and the sweep of session 33 enters by name when it is committed."""
    records = read_records(pass_files())
    groups, _ = pass_records(records)
    train = groups["bwd-train"]
    assert all(training_variant(r) and r["system"] == "mok" for r in train)
    a_epi = [r for r in train if r["_file"].endswith("bwd_a_epi_s32.jsonl")]
    assert sorted((r["model"], r["tokens"]) for r in a_epi) == sorted(
        (m, t) for m in ("kimi-k2", "glm-5") for t in (1024, 2048, 4096))
    assert len(groups["bwd"]) == 116 and not any(training_variant(r) for r in groups["bwd"])
    sweep = REPO / "calibration" / "runs" / "h200" / "bwd_train_s33.jsonl"
    assert (sweep in pass_files()) == sweep.exists()
    # the narrow tiles on kimi-k2 / glm-5 (the training tiles before a_epi) are in neither group
    old = [r for r in records if r["system"] == "mok" and r["pass"] == "bwd"
           and r.get("tiles", {}).get("bn_a") == 128 and r["model"] in ("kimi-k2", "glm-5")]
    assert old and not any(r in train or r in groups["bwd"] for r in old)


# ---- the model's switch ----

def test_training_tiles_recompute_nothing():
    """Same rate and per-block time as the recomputing tiles: the training tiles differ by the
    recomputed gate/up alone (4HI of 16HI FLOPs a row)."""
    p = h200(bwd_recompute=1.0)
    p = p.with_values(bwd_train_eff_scale=p["bwd_gemm_eff_scale"],
                      bwd_train_wgrad_tile_us=p["wgrad_tile_us"])
    r = ffn_pieces(scn(), p, 4096.0, 32.0, 8.0, 100, 2048, wave_sync=0.0)  # no wave rounding
    t = ffn_pieces(scn(bwd_tiles="training"), p, 4096.0, 32.0, 8.0, 100, 2048, wave_sync=0.0)
    assert r["gate_up"] > 0 and t["gate_up"] == 0.0
    assert t["dgrad"] == pytest.approx(r["dgrad"]) and t["wgrad"] == pytest.approx(r["wgrad"])
    assert r["gate_up"] == pytest.approx(2 / 3 * r["dgrad"])   # gate/up: 4HI of dA + dX's 6HI


def test_training_tiles_read_the_forwards_efficiency_for_their_shape(monkeypatch):
    """The training tiles' rate is the forward's efficiency for the same shape (the GEMM
    table's, else gemm_eff) times bwd_train_eff_scale; the recomputing tiles ask for their own
    pass (session 35)."""
    import mok_model.analytic as analytic

    asked = []
    real = analytic.gemm_efficiency

    def spy(p, s, sms=None):
        asked.append((s.pass_, s.bwd_tiles))
        return real(p, s, sms)

    monkeypatch.setattr(analytic, "gemm_efficiency", spy)
    p = h200()
    ffn_pieces(scn(bwd_tiles="training"), p, 4096.0, 32.0, 8.0, 100, 2048)
    assert asked == [("fwd", "recompute")]
    asked.clear()
    ffn_pieces(scn(), p, 4096.0, 32.0, 8.0, 100, 2048)
    assert asked == [("bwd", "recompute")]


def test_training_tiles_write_each_weight_gradient_once_in_bf16():
    """The HBM floor: the training tiles (w_direct, w_bf16) store 2 bytes a weight gradient
    whatever wgrad_bytes_per_weight (the recomputing default's traffic) says; the recomputing
    tiles follow that parameter."""
    from mok_model.analytic import expert_ffn_parts
    args = (64.0 * 16, 16.0, 16.0, 100, 8192)
    sc = scn("llama4-maverick", 1024, "training")
    floors = [expert_ffn_parts(sc, h200(wgrad_bytes_per_weight=b), *args)[1] for b in (4.0, 8.0)]
    assert floors[0] == pytest.approx(floors[1])
    rc = scn("llama4-maverick", 1024, "recompute")
    lo, hi = (expert_ffn_parts(rc, h200(wgrad_bytes_per_weight=b), *args)[1] for b in (2.0, 8.0))
    assert hi > lo and lo == pytest.approx(floors[0], rel=0.2)


@pytest.mark.parametrize("engine", ["analytic", "sim"])
def test_training_tiles_predicted_faster(engine):
    """With the shipped parameters the training tiles are predicted faster than the recomputing
    ones (measured 1.2-1.6x: docs/kernels.md, "Backward megakernel"), in both engines."""
    for model, tokens in (("kimi-k2", 1024), ("glm-5", 4096)):
        r, t = (predict(scn(model, tokens, tiles), CFG, "mok", _shipped(), engine).latency_ms
                for tiles in ("recompute", "training"))
        assert 1.2 < r / t < 2.2


def _shipped():
    from mok_model.params import load_params
    return load_params(None, "h200-1")


def test_each_training_term_moves_only_the_training_tiles():
    s_r, s_t = scn(), scn(bwd_tiles="training")
    total = lambda s, p: float(sum(v[0] for v in mok_config_terms(s, p, CFG)["terms"].values()))  # noqa
    base = h200()
    times = [total(s_t, base.with_values(bwd_train_eff_scale=v)) for v in (0.4, 0.6, 0.8, 1.0)]
    assert all(a > b for a, b in zip(times, times[1:]))
    slow = base.with_values(bwd_train_wgrad_tile_us=5.0, bwd_train_eff_scale=0.4)
    assert total(s_t, slow) > total(s_t, base)
    assert total(s_r, slow) == total(s_r, base)          # the recomputing tiles keep theirs
    assert total(s_t, base.with_values(bwd_gemm_eff_scale=0.4, wgrad_tile_us=5.0,
                                       bwd_recompute=1.0)) == total(s_t, base)


def test_heldout_ranges_are_the_training_tiles_own():
    assert group_key("analytic", "bwd", "bf16", 4096, bwd_tiles="training") == \
        "analytic bwd-train bf16 >512"
    assert group_key("analytic", "bwd", "bf16", 4096) == "analytic bwd bf16 >512"


def test_predict_cli_switch():
    def run(*extra):
        r = subprocess.run([sys.executable, "-m", "mok_model.cli", "predict", "--hardware", "h200-1",
                            "--model", "glm-5", "--ep", "8", "--tokens", "2048", "--pass", "bwd",
                            "--dispatch", "pull", "--combine", "push", "--minibatch", "4096",
                            "--comm-sms", "32", "--macrobatch", "131072", "--capacity", "1.0",
                            "--json", *extra], capture_output=True, text=True, cwd=REPO,
                           timeout=120, env={**os.environ, "PYTHONPATH": str(REPO)})
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)
    default, recompute, training = run(), run("--bwd-tiles", "recompute"), run("--bwd-tiles", "training")
    assert "bwd_tiles" not in default and default["latency_ms"] == recompute["latency_ms"]
    assert training["bwd_tiles"] == "training"
    assert training["latency_ms"] < default["latency_ms"]


# ---- the fit, on records the model made ----

TRUE = {"bwd_train_eff_scale": 0.7, "bwd_train_wgrad_tile_us": 2.5}


def synthetic(p_true) -> list[dict]:
    out = [record(model=m, tokens=t, tiles=TRAIN) for m in ("kimi-k2", "glm-5")
           for t in (1024, 2048, 4096)]
    out.append(record(tokens=2048, tiles=BENCH))   # a recomputing record: its own group
    for r, v in zip(out, predict_records(out, p_true)):
        r["latency_ms"]["median"] = float(v)
    return out


def test_fit_recovers_the_training_terms():
    recs = synthetic(h200(**TRUE))
    res = fit_passes(recs, h200(), only=("bwd-train",))
    assert res.fitted == {"bwd-train": PASS_FREE["bwd-train"]}
    for name, v in TRUE.items():
        assert res.params[name] == pytest.approx(v, rel=0.02)
    assert res.params["bwd_gemm_eff_scale"] == h200()["bwd_gemm_eff_scale"]   # held
    assert len(res.residuals["bwd-train"]) == 6
    h = held_out(recs, h200(), "bwd-train", "model")
    assert h.n == 6 and h.mape < 1e-3 and [f["value"] for f in h.folds] == ["glm-5", "kimi-k2"]
