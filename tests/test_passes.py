"""The backward megakernel's and the FP8 forward's model terms (analytic and simulator), the
records' kernel variants, and the held-out report on a small synthetic record set (CPU)."""

from __future__ import annotations

import copy
import io
import json

import numpy as np
import pytest

from calibration.passes import PASS_FREE, fit_passes, held_out, merge_uncertainty, pass_records
from calibration.priors import H200_LOCAL, OUR_PASSES, prior_params
from calibration.report_passes import render, report
from mok_model.analytic import expert_ffn_parts, ffn_pieces, mok_config_terms, quantize_time
from mok_model.errors import MokInputError
from mok_model.params import ADDED
from mok_model.predict import predict
from mok_model.presets import load_hardware, load_model
from mok_model.records import (default_variant, kernel_variant, split_default_variant,
                               validate_record)
from mok_model.scenario import Config, Scenario

CFG = Config(dispatch="pull", combine="push", minibatch=4096, comm_sms=32, macrobatch=131072,
             capacity=1.0)


def h200(**changes):
    p = prior_params("h200-1", H200_LOCAL)
    return p.with_values(**changes) if changes else p


def scn(model="kimi-k2", tokens=4096, pass_="fwd", precision="bf16", routing="uniform", ep=8):
    return Scenario(load_hardware("h200-1"), load_model(model), ep, tokens, pass_, precision, routing)


def total(s, p, cfg=CFG) -> float:
    return float(sum(v[0] for v in mok_config_terms(s, p, cfg)["terms"].values()))


# ---- the terms ----

def test_added_priors_keep_the_old_backward_and_fp8():
    """With the ADDED priors (a file written before the terms) the backward is twice the
    forward-shaped tiles and FP8 runs at the old rate: the old model, unchanged."""
    p = prior_params("h200-1", H200_LOCAL).with_values(**{k: v for k, (v, _) in ADDED.items()})
    s = scn(pass_="bwd")
    pieces = ffn_pieces(s, p, 4096.0, 32.0, 8.0, 100, s.model.expert_width)
    assert pieces["gate_up"] == 0.0
    assert pieces["wgrad"] == pytest.approx(pieces["dgrad"])
    fwd = ffn_pieces(scn(), p, 4096.0, 32.0, 8.0, 100, 2048)
    assert pieces["dgrad"] * p["bwd_gemm_eff_scale"] == pytest.approx(fwd["gate_up"] + fwd["down"])


def test_backward_recompute_and_weight_blocks_add_time():
    s = scn(pass_="bwd")
    base = h200(bwd_recompute=0.0, wgrad_tile_us=0.0)
    t0 = total(s, base)
    t1 = total(s, base.with_values(bwd_recompute=1.0))
    t2 = total(s, base.with_values(bwd_recompute=1.0, wgrad_tile_us=2.0))
    assert t0 < t1 < t2
    # recomputing gate/up adds 4HI to the 12HI FLOPs per row: at most a third more compute
    assert t1 / t0 < 4 / 3 + 1e-9
    # the per-block latency does not depend on the tokens: its share falls as tokens grow
    small, big = scn(pass_="bwd", tokens=1024), scn(pass_="bwd", tokens=8192)
    share = lambda sc: 1 - total(sc, base.with_values(bwd_recompute=1.0)) / total(  # noqa: E731
        sc, base.with_values(bwd_recompute=1.0, wgrad_tile_us=2.0))
    assert share(small) > share(big) > 0


@pytest.mark.parametrize("name,lo", [("bwd_gemm_eff_scale", 0.3), ("wgrad_eff_scale", 0.3),
                                     ("fp8_gemm_eff", 0.1)])
def test_efficiencies_monotone(name, lo):
    s = scn(pass_="fwd" if name.startswith("fp8") else "bwd",
            precision="fp8" if name.startswith("fp8") else "bf16")
    times = [total(s, h200(**{name: v})) for v in (lo, 0.5, 0.7, 0.9)]
    assert all(a > b for a, b in zip(times, times[1:]))


def test_backward_monotone_in_tokens_and_width():
    p = h200()
    t = [total(scn(pass_="bwd", tokens=n), p) for n in (1024, 2048, 4096, 8192)]
    assert all(a < b for a, b in zip(t, t[1:]))
    assert total(scn(model="glm-5", pass_="bwd"), p) < total(scn(model="kimi-k2", pass_="bwd"), p)


def test_fp8_scale_ffma_and_quantize_in_copy():
    s = scn(precision="fp8")
    p = h200()
    assert total(s, p.with_values(fp8_scale_cost=0.0)) < total(s, p)
    # quantized while copying: no pass of its own, BF16 rows on the copy, slower copy rate
    assert quantize_time(s, p) == 0.0
    assert quantize_time(s, p.with_values(fp8_quant_in_copy=0.0)) > 0.0
    d = lambda q: mok_config_terms(s, p.with_values(fp8_quant_copy_scale=q), CFG)["work"]["dispatch"][0]  # noqa
    assert d(0.5) == pytest.approx(2 * d(1.0), rel=0.01)  # a latency per minibatch aside


def test_fp8_tile_rows_limit():
    """FP8 tiles of 64 rows waste less of a partly filled tile than 128-row ones: with few rows
    per expert the 64-row tiles are faster, with whole tiles the same."""
    s = scn(precision="fp8", tokens=1024)
    p = h200(fp8_scale_cost=0.0)
    assert total(s, p.with_values(fp8_tile_m=64)) < total(s, p.with_values(fp8_tile_m=128))
    rows = np.array([4096.0])
    a, _ = expert_ffn_parts(s, p.with_values(fp8_tile_m=64), rows, rows / 64, 4.0, 100, 2048,
                            wave_sync=0.0)
    b, _ = expert_ffn_parts(s, p.with_values(fp8_tile_m=128), rows, rows / 128, 4.0, 100, 2048,
                            wave_sync=0.0)
    assert a == pytest.approx(b)


def test_fp8_eff_one_limit():
    """At fp8_gemm_eff x FP8 peak = gemm_eff x BF16 peak and no scale cost, FP8 tiles take the
    BF16 tiles' time (the shared expert too, in FP8 in our kernel)."""
    p = h200(fp8_scale_cost=0.0, fp8_tile_m=128)
    p = p.with_values(fp8_gemm_eff=p["gemm_eff"] * 989.0 / 1979.0)
    b = ffn_pieces(scn(), p, 4096.0, 32.0, 8.0, 100, 2048)
    f = ffn_pieces(scn(precision="fp8"), p, 4096.0, 32.0, 8.0, 100, 2048)
    assert sum(f.values()) == pytest.approx(sum(b.values()))


@pytest.mark.parametrize("pass_,precision", [("bwd", "bf16"), ("fwd", "fp8")])
def test_simulator_agrees_with_analytic(pass_, precision):
    s = scn(pass_=pass_, precision=precision, tokens=2048)
    p = h200()
    a = predict(s, CFG, "mok", p, "analytic").latency_ms
    m = predict(s, CFG, "mok", p, "sim").latency_ms
    assert m == pytest.approx(a, rel=0.1)
    # and both follow the new terms the same way
    q = p.with_values(wgrad_tile_us=5.0, fp8_gemm_eff=0.3)
    a2 = predict(s, CFG, "mok", q, "analytic").latency_ms
    m2 = predict(s, CFG, "mok", q, "sim").latency_ms
    assert a2 > a and m2 > m
    assert m2 / m == pytest.approx(a2 / a, rel=0.1)


def test_our_passes_priors_are_within_bounds_and_sourced():
    p = h200()
    for name, (value, source) in OUR_PASSES.items():
        assert p[name] == value and source.split(":")[0] in ("design", "prior", "derived", "measured")


# ---- records: kernel variants ----

def record(pass_="bwd", precision="bf16", system="mok", tokens=4096, model="kimi-k2", note="",
           tiles=None, routing=None, comm_sms=32, latency=10.0, rid=None):
    rec = {"schema": "mok-run/1", "id": rid or f"{system}-{model}-{pass_}-{precision}-{tokens}-{comm_sms}",
           "date": "2026-12-01T04:00:00+00:00",
           "hardware": {"preset": "h200-1", "gpu": "NVIDIA H200", "gpus": 1, "sms": 132,
                        "fabric": "local-hbm"}, "software": {}, "system": system, "model": model,
           "ep": 8, "emulated_peers": True, "tokens": tokens, "pass": pass_, "precision": precision,
           "config": {"dispatch": "pull", "combine": "push", "minibatch": 4096,
                      "comm_sms": comm_sms, "macrobatch": 131072, "capacity": 1.0},
           "routing": routing or {"kind": "uniform", "seed": 0},
           "latency_ms": {"median": latency}, "source": "measured", "note": note}
    if tiles is not None:
        rec["tiles"] = tiles
    return rec


def test_variants_from_tiles_notes_and_age():
    old_bwd = record(note="backward pass; graph replay")
    assert not default_variant(old_bwd) and default_variant(old_bwd, old=True)
    assert kernel_variant(old_bwd)["bw"] == 128
    new_note = record(note="backward tiles bw=256,w_flat=1,a_fuse_gu=1; graph replay")
    assert default_variant(new_note)
    assert not default_variant(record(note="backward tiles w_flat=1,a_fuse_gu=1; x"))  # bw 128 then
    tiles = {"bn_a": 64, "bn_x": 128, "bk_x": 0, "bw": 0, "bw_h": 128, "bk_rows": 64,
             "num_warps": 8, "num_stages": 3, "w_flat": 1, "a_fuse_gu": 1, "diag": 0}
    assert default_variant(record(tiles=tiles))  # bw 0 in tiles: today's rule, 256
    assert not default_variant(record(tiles={**tiles, "diag": 1}))
    assert not default_variant(record(tiles={**tiles, "w_flat": 0}))
    assert not default_variant(record(tiles={**tiles, "saved_gu": 1}))  # g, u not recomputed
    assert default_variant(record(tiles={**tiles, "saved_gu": 0}))
    fp8_old = record(pass_="fwd", precision="fp8", note="ring rows used 131072; graph replay")
    assert not default_variant(fp8_old) and default_variant(fp8_old, old=True)
    assert default_variant(record(pass_="fwd", precision="fp8", note="fp8 kernel v2-bm64; x"))
    assert not default_variant(record(pass_="fwd", precision="fp8", note="fp8 kernel v2; x"))
    fwd_tiles = {"block_m": 64, "bn_gu": 128, "bn_dn": 256, "block_k": 128, "num_warps": 8,
                 "num_stages": 4, "fp8_kernel": "v2"}
    assert default_variant(record(pass_="fwd", precision="fp8", tiles=fwd_tiles))
    assert not default_variant(record(pass_="fwd", precision="fp8",
                                      tiles={**fwd_tiles, "fp8_kernel": "v1"}))
    assert default_variant(record(pass_="fwd"))  # BF16 forward, narrow experts: group_m 1
    # wide experts (tiles.py): group_m 8 is the default since 2026-12-01; older records ran 1
    wide = record(pass_="fwd", model="mixtral-8x7b")
    assert not default_variant(wide) and default_variant(wide, old=True)
    assert default_variant(record(pass_="fwd", model="mixtral-8x7b", tiles={"group_m": 8}))
    assert not default_variant(record(pass_="fwd", model="kimi-k2", tiles={"group_m": 8}))
    assert kernel_variant(wide) == {"group_m": 1, "tma_a": 0, "copy_rows": 16, "split_dn": 1,
                                    "list_lag": 1}
    # activation tiles through TMA: another variant (named in tiles only when on)
    assert not default_variant(record(pass_="fwd", tiles={"group_m": 1, "tma_a": 1}))
    # more rows per dispatch copy step: another variant
    assert not default_variant(record(pass_="fwd", tiles={"group_m": 1, "copy_rows": 64}))
    assert default_variant(record(pass_="fwd", tiles={"group_m": 1, "copy_rows": 16}))
    assert not default_variant(record(pass_="fwd", tiles={"group_m": 1, "split_dn": 8}))
    assert default_variant(record(system="gemm-only"))
    assert default_variant({**old_bwd, "source": "published"})  # another kernel's rows
    kept, note = split_default_variant([old_bwd, new_note, fp8_old])
    assert kept == [new_note] and "skipped 2 MoK records" in note


def test_tiles_field_validated():
    validate_record(record(tiles={"block_m": 64, "fp8_kernel": "v2"}))
    for bad in ([64], {"block_m": 64.5}, {"w_flat": True}, {"x": None}):
        with pytest.raises(MokInputError, match="tiles"):
            validate_record(record(tiles=bad))


@pytest.mark.parametrize("change, match", [
    (dict(id=""), "id ''"),
    (dict(date="not-a-date"), "date 'not-a-date'"),
    (dict(latency_ms={"median": 1.0, "p90": float("inf")}), "p90=inf"),
    (dict(latency_ms={"median": 1.0, "p10": 1.2, "p90": 1.5}), "in that order"),
    (dict(latency_ms={"median": 1.0, "p10": 0.9, "p90": 0.95}), "in that order"),
    (dict(latency_ms={"median": 1.0, "n": 0}), "n=0"),
    (dict(breakdown_ms={"kernel": "fast"}), "breakdown_ms"),
    (dict(breakdown_ms={"kernel": -1.0}), "breakdown_ms"),
])
def test_malformed_record_fields_refused(change, match):
    """A record that cannot be a measurement is refused where it is read or appended."""
    validate_record(record())
    with pytest.raises(MokInputError, match=match):
        validate_record({**record(), **change})


def test_old_zipf_records_skipped():
    z = record(routing={"kind": "zipf", "arg": 1.2, "seed": 0},
               note="backward tiles bw=256,w_flat=1,a_fuse_gu=1")
    groups, notes = pass_records([z])
    assert groups["bwd"] == [] and "zipf" in notes[0]
    z2 = {**z, "routing": {**z["routing"], "order": "model"}}  # drawn in the model's order
    assert pass_records([z2])[0]["bwd"] == [z2]


# ---- fit and held-out report on synthetic records made by the model ----

TRUE = {"bwd_gemm_eff_scale": 0.55, "wgrad_tile_us": 2.0, "fp8_gemm_eff": 0.3}


def synthetic(p_true) -> list[dict]:
    """Records whose latencies are the model's own at TRUE: 2 models x 2 token counts x 2 comm
    SM counts, backward and FP8 forward, default variants."""
    out = []
    from calibration.scoring import predict_records
    for model in ("kimi-k2", "glm-5"):
        for tokens in (1024, 4096):
            for cs in (16, 32):
                out.append(record(model=model, tokens=tokens, comm_sms=cs,
                                  note="backward tiles bw=256,w_flat=1,a_fuse_gu=1"))
                out.append(record(pass_="fwd", precision="fp8", model=model, tokens=tokens,
                                  comm_sms=cs, note="fp8 kernel v2-bm64"))
    pred = predict_records(out, p_true)
    for r, v in zip(out, pred):
        r["latency_ms"]["median"] = float(v)
    return out


@pytest.fixture(scope="module")
def synth():
    return synthetic(h200(**TRUE))


def test_fit_recovers_the_terms(synth):
    res = fit_passes(synth, h200())
    for name, v in TRUE.items():
        assert res.params[name] == pytest.approx(v, rel=0.02)
    assert res.fitted == {**PASS_FREE, "bwd-train": [], "fp8-gluon": []}  # none of theirs here
    assert max(abs(r["rel_error"]) for g in res.residuals.values() for r in g) < 1e-3


def test_fit_fails_on_a_wrong_form(synth):
    """The held-out error is not zero by construction: records made with a weight-gradient
    rate the fit holds fixed (wgrad_eff_scale 0.5) leave an error the fit cannot remove."""
    other = synthetic(h200(**TRUE, wgrad_eff_scale=0.5, fp8_scale_cost=1.0))
    h = held_out(other, h200(fp8_scale_cost=0.0), "fp8", "model")
    assert h.n == 8 and h.mape >= 0.0
    exact = held_out(synth, h200(), "bwd", "tokens")
    assert exact.mape < 1e-3 and exact.spearman == pytest.approx(1.0)


def test_report_on_synthetic_records(synth):
    extra = copy.deepcopy(synth[0])
    extra["id"], extra["note"] = "old-variant", "backward pass"
    z = copy.deepcopy(synth[0])
    z["id"], z["routing"] = "zipf-one", {"kind": "zipf", "arg": 1.2, "seed": 0}
    doc = report(synth + [extra, z], h200())
    assert any("skipped 1 zipf" in n for n in doc["notes"])
    assert doc["counts"] == {"bwd": 8, "bwd-train": 0, "fp8": 8, "fp8-gluon": 0}
    assert any("skipped 1 MoK record" in n for n in doc["notes"])
    for g in ("bwd", "fp8"):
        for key in ("model", "tokens"):
            h = doc["held_out"][g][key]
            assert h["n"] == 8 and h["mape"] < 1e-3 and len(h["folds"]) == 2
    buf = io.StringIO()
    render(doc, buf)
    text = buf.getvalue()
    assert "| bwd | each model | 8 |" in text and "goal: held-out MAPE <= 8%" in text and "folds over it: none" in text
    json.dumps(doc, default=float)


def test_report_needs_two_values():
    one = [r for r in synthetic(h200(**TRUE)) if r["model"] == "glm-5"]
    with pytest.raises(MokInputError, match="two or more"):
        held_out(one, h200(), "bwd", "model")


def test_merge_uncertainty_pairs_columns():
    a = {"method": "bootstrap", "seed": 0, "n": 3, "groups": 2, "records": 4, "free": ["gemm_eff"],
         "held": "x", "summary": {"gemm_eff": {}}, "samples": [[0.5], [0.6], [0.7]]}
    b = {**a, "n": 2, "free": ["fp8_gemm_eff"], "summary": {"fp8_gemm_eff": {}},
         "samples": [[0.2], [0.3]]}
    m = merge_uncertainty(a, {"fp8": b, "bwd": None})
    assert m["n"] == 2 and m["free"] == ["gemm_eff", "fp8_gemm_eff"]
    assert m["samples"] == [[0.5, 0.2], [0.6, 0.3]]
    assert merge_uncertainty(None, {"bwd": None}) is None


@pytest.mark.parametrize("engine", ["analytic", "sim"])
def test_weight_gradient_blocks_count_each_expert_once(engine):
    """Cutting the rows into more minibatches splits experts' rows, not their weight-gradient
    blocks: with the per-block time and no per-minibatch overhead, the backward barely moves
    with the minibatch (it would grow by the split experts' blocks otherwise)."""
    s = scn(pass_="bwd", tokens=4096)
    p = h200(minibatch_overhead_us=0.0, wgrad_tile_us=20.0)
    t = [predict(s, Config("pull", "push", mb, 32, 131072, 1.0), "mok", p, engine).latency_ms
         for mb in (2048, 8192)]
    assert t[0] == pytest.approx(t[1], rel=0.03)


def test_report_cli(synth, tmp_path, capsys):
    from calibration.report_passes import main
    from mok_model.records import append_records
    runs = tmp_path / "runs.jsonl"
    append_records(runs, synth)
    params = tmp_path / "p.json"
    from mok_model.params import write_params
    write_params(params, h200(), "test")
    assert main([str(runs), "--params", str(params), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["held_out"]["fp8"]["model"]["mape"] < 1e-3
    assert main([str(tmp_path / "missing.jsonl")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("python -m calibration.report_passes: error: ") and err.count("\n") == 1
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({**synth[0], "tiles": [1]}) + "\n")
    assert main([str(bad)]) == 2
    assert "bad.jsonl:1" in capsys.readouterr().err
