"""Uncertainty bands: the fit samples its parameters (a bootstrap over whole workloads), the
parameters file stores them, and predictions re-predict with them. Small synthetic fits only."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from calibration.cli import calibrate_cli, priors_for
from calibration.fit import fit, predict_record
from mok_model.band import band
from mok_model.cli import main
from mok_model.params import PARAMS_DIR, BOUNDS, read_params, write_params
from mok_model.predict import predict
from mok_model.presets import load_hardware, load_model
from mok_model.records import append_records
from mok_model.scenario import Config, Scenario

TRUE = {"gemm_eff": 0.6, "mok_fixed_us": 50.0}
FREE = ["gemm_eff", "mok_fixed_us"]
MODELS = ("kimi-k2", "glm-5")
TOKENS = (1024, 2048, 4096)
W = ["--hardware", "h200-1", "--model", "kimi-k2", "--ep", "16", "--tokens", "2048"]


def records(scatter: float, models=MODELS, tokens=TOKENS, seed: int = 1) -> list[dict]:
    """Records the analytic model predicts with TRUE on h200-1, times a seeded log-normal
    scatter (the same draws for every `scatter`, so only the size of the scatter differs)."""
    truth = priors_for("h200-1").with_values(**TRUE)
    rng = np.random.default_rng(seed)
    out, i = [], 0
    for model in MODELS:
        for t in TOKENS:
            for mb in (1024, 4096):
                for cs in (16, 32):
                    z = rng.standard_normal()
                    if model not in models or t not in tokens:
                        continue
                    rec = {"schema": "mok-run/1", "id": f"syn-{i}", "date": "2026-01-01",
                           "hardware": {"preset": "h200-1", "gpu": "NVIDIA H200", "gpus": 1,
                                        "sms": 132, "fabric": "local-hbm", "driver": "synthetic"},
                           "software": {"torch": "-", "triton": "-", "commit": "-"},
                           "system": "mok", "model": model, "ep": 16, "emulated_peers": True,
                           "tokens": t, "pass": "fwd", "precision": "bf16",
                           "config": Config(minibatch=mb, comm_sms=cs).as_dict(),
                           "routing": {"kind": "uniform", "seed": 0},
                           "latency_ms": {"median": 1.0}, "source": "measured",
                           "note": "synthetic: the analytic model with known parameters, scattered"}
                    rec["latency_ms"]["median"] = predict_record(rec, truth) * float(np.exp(scatter * z))
                    out.append(rec)
                    i += 1
    return out


def scenario() -> Scenario:
    return Scenario(load_hardware("h200-1"), load_model("kimi-k2"), 16, 2048)


def width(recs: list[dict], method: str = "bootstrap", n: int = 20) -> float:
    """Relative width of the band of one prediction with the parameters fitted to `recs`."""
    res = fit(recs, priors_for("h200-1"), FREE, band=method, band_samples=n)
    pred = predict(scenario(), Config(minibatch=4096, comm_sms=16), "mok", res.params)
    b = band(pred, res.params)
    assert b.lo <= pred.latency_ms <= b.hi
    return (b.hi - b.lo) / pred.latency_ms


@pytest.fixture(scope="module")
def fitted(tmp_path_factory) -> Path:
    """A parameters file from `mok calibrate` on scattered synthetic records (20 samples)."""
    d = tmp_path_factory.mktemp("bands")
    runs = d / "runs.jsonl"
    append_records(runs, records(0.03))
    out = d / "params.json"
    assert calibrate_cli([str(runs), "--out", str(out), "--free", ",".join(FREE),
                          "--band-samples", "20", "--json"]) == 0
    return out


def test_fit_stores_bounded_deterministic_samples():
    recs = records(0.03)
    a = fit(recs, priors_for("h200-1"), FREE, band="bootstrap", band_samples=12, band_seed=3)
    b = fit(recs, priors_for("h200-1"), FREE, band="bootstrap", band_samples=12, band_seed=3)
    u = a.uncertainty
    assert u == b.uncertainty  # same records, same seed: the same samples
    assert u["method"] == "bootstrap" and u["n"] == 12 and u["seed"] == 3 and u["free"] == FREE
    assert u["groups"] == len(MODELS) * len(TOKENS) and u["records"] == len(recs)
    rows = np.array(u["samples"])
    assert rows.shape == (12, 2)
    for j, f in enumerate(FREE):
        assert np.all((rows[:, j] >= BOUNDS[f][0]) & (rows[:, j] <= BOUNDS[f][1]))
        s = u["summary"][f]
        assert s["p05"] <= s["p50"] <= s["p95"] and s["value"] == pytest.approx(a.params[f])
    # the values do not depend on the band
    plain = fit(recs, priors_for("h200-1"), FREE)
    assert plain.uncertainty is None and plain.params.values == a.params.values
    other = fit(recs, priors_for("h200-1"), FREE, band="bootstrap", band_samples=12, band_seed=4)
    assert other.uncertainty["samples"] != u["samples"]


def test_band_is_zero_on_exact_records_and_grows_with_scatter():
    assert width(records(0.0)) < 1e-6  # every resample refits the truth
    narrow, wide = width(records(0.01)), width(records(0.05))
    assert 0 < narrow < wide


def test_band_grows_with_fewer_workloads():
    many = width(records(0.03))
    few = width(records(0.03, models=("kimi-k2",), tokens=(1024, 2048)))
    assert few > many


def test_linear_method_is_close_to_the_refits():
    recs = records(0.03)
    boot, lin = width(recs, "bootstrap"), width(recs, "linear")
    assert lin == pytest.approx(boot, rel=0.5)


def test_one_workload_has_no_band():
    res = fit(records(0.03, models=("kimi-k2",), tokens=(2048,)), priors_for("h200-1"), FREE,
              band="bootstrap", band_samples=5)
    assert res.uncertainty is None and "one workload" in res.notes[0]


def test_predict_json_band_brackets_point_and_is_deterministic(fitted, capsys):
    assert main(["predict", *W, "--params", str(fitted), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    b = d["band_ms"]
    assert set(b) == {"lo", "hi", "level", "method", "n", "params"}
    assert isinstance(b["lo"], float) and isinstance(b["hi"], float)
    assert b["lo"] <= d["latency_ms"] <= b["hi"] and b["lo"] < b["hi"]
    assert b["level"] == 0.9 and b["method"] == "bootstrap" and b["n"] == 20
    assert b["params"] == str(fitted) and isinstance(d["band_note"], str)
    assert "not the model's error" in d["band_note"]
    assert main(["predict", *W, "--params", str(fitted), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["band_ms"] == b
    # baselines use the fitted gemm_eff too: their band is not empty
    assert main(["predict", *W, "--params", str(fitted), "--system", "nccl-torch", "--json"]) == 0
    nb = json.loads(capsys.readouterr().out)
    assert nb["band_ms"]["lo"] <= nb["latency_ms"] <= nb["band_ms"]["hi"]


def test_predict_text_has_one_band_line(fitted, capsys):
    assert main(["predict", *W, "--params", str(fitted)]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("latency:"))
    m = re.fullmatch(r"latency: ([\d.]+) ms \(slowest GPU \d+; 90% band ([\d.]+)-([\d.]+) ms "
                     r"from the fit of (.+)\)", line)
    assert m and float(m[2]) <= float(m[1]) <= float(m[3]) and m[4] == str(fitted)


def test_calibrate_band_none_and_old_files_have_no_band(fitted, tmp_path, capsys):
    doc = json.loads(fitted.read_text())
    del doc["uncertainty"]
    old = tmp_path / "old.json"
    old.write_text(json.dumps(doc))
    assert main(["predict", *W, "--params", str(old), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["band_ms"] is None and d["band_note"].startswith("no band:")
    assert "no uncertainty block" in d["band_note"]
    assert main(["predict", *W, "--params", str(old)]) == 0
    assert "no band: " in capsys.readouterr().out
    runs = tmp_path / "runs.jsonl"
    append_records(runs, records(0.03))
    out = tmp_path / "p.json"
    assert calibrate_cli([str(runs), "--out", str(out), "--free", "mok_fixed_us",
                          "--band", "none"]) == 0
    assert "uncertainty: none estimated" in capsys.readouterr().out
    assert "uncertainty" not in json.loads(out.read_text())


def test_priors_and_simulator_say_no_band(capsys, tmp_path):
    from calibration.priors import HOPPER, prior_params
    from mok_model.params import write_params

    priors = tmp_path / "priors.json"       # no shipped file is priors-only since session 56
    write_params(priors, prior_params("h100-hgx8", HOPPER), "priors")
    assert main(["predict", "--hardware", "h100-hgx8", "--params", str(priors), "--model",
                 "kimi-k2", "--ep", "8", "--tokens", "1024", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["band_ms"] is None and d["band_note"] == \
        "no band: parameters are priors (not fitted to any records)"
    assert main(["simulate", "--hardware", "gb300-nvl72", "--model", "glm-5", "--ep", "4",
                 "--tokens", "256", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["band_ms"] is None and "analytic engine only" in d["band_note"]


def test_zero_width_when_no_fitted_parameter_enters(fitted, tmp_path, capsys):
    doc = json.loads(fitted.read_text())
    doc["uncertainty"].update(free=["nccl_eff"], samples=[[0.3], [0.5], [0.7]], n=3)
    p = tmp_path / "nccl-only.json"
    p.write_text(json.dumps(doc))
    assert main(["predict", *W, "--params", str(p), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["band_ms"]["lo"] == d["band_ms"]["hi"] == d["latency_ms"]
    assert "zero width" in d["band_note"]


@pytest.mark.parametrize("change, needle", [
    ({"method": "guess"}, "method"),
    ({"free": ["no_such"]}, "free"),
    ({"n": 7}, "n >= 2"),
    ({"samples": [[0.6, 50.0]] * 19 + [[2.0, 50.0]]}, "gemm_eff=2.0"),
    ({"samples": [[0.6]] * 20}, "sample 0"),
    ({"seed": "x"}, "seed"),
])
def test_malformed_block_is_refused(fitted, tmp_path, capsys, change, needle):
    doc = json.loads(fitted.read_text())
    doc["uncertainty"].update(change)
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(doc))
    assert main(["predict", *W, "--params", str(p)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mok: error:") and "uncertainty block" in err and needle in err
    assert err.count("\n") == 1


def test_write_read_roundtrip_keeps_block(fitted, tmp_path):
    p = read_params(fitted)
    assert p.uncertainty["n"] == 20 and len(p.samples()) == 20
    assert p.with_values(gemm_eff=0.5).uncertainty is None  # changed values: samples no longer apply
    out = tmp_path / "again.json"
    write_params(out, p, "copy")
    assert read_params(out).uncertainty == p.uncertainty


def test_shipped_files(capsys):
    """Fitted files carry a block, transferred ones carry the gb300 samples (marked), priors
    none; the block's fitted values are the file's values."""
    for name in ("gb300-nvl72", "h200-1", "h200-hgx8"):
        p = read_params(PARAMS_DIR / f"{name}.json")
        assert p.uncertainty and p.uncertainty["method"] == "bootstrap", name
        for f, s in p.uncertainty["summary"].items():
            assert s["value"] == pytest.approx(p[f], rel=1e-9, abs=1e-12), (name, f)
    for name in ("gb200-nvl72", "vr-nvl72", "rubin-ultra-nvl576", "b200-hgx8", "b300-dgx8"):
        u = read_params(PARAMS_DIR / f"{name}.json").uncertainty
        assert u and u["transferred_from"] == "gb300-nvl72", name
        assert ("host_launch_scale" in u["free"]) == (name not in ("b200-hgx8", "b300-dgx8"))
    for name in ("h100-1", "h100-hgx8"):     # transferred from h200-1 (calibration/transfer.py)
        assert read_params(PARAMS_DIR / f"{name}.json").uncertainty["transferred_from"] \
            == ("h200-1" if name == "h100-1" else "h100-1"), name
    assert main(["predict", "--hardware", "gb200-nvl72", "--model", "kimi-k2", "--ep", "16",
                 "--tokens", "2048"]) == 0
    out = capsys.readouterr().out
    assert "90% band" in out and "transferred" in out


def test_every_replicate_keeps_both_passes():
    """The bootstrap draws workloads within each pass and precision: on GB300's published rows
    (three forward, two backward workloads) no replicate lacks the backward rows, so a parameter
    only they identify (wgrad_bytes_per_weight) is never left free to run to a bound (session 71:
    its band read 0.002-16, the backward band's top doubled)."""
    from calibration.fit import estimate_uncertainty
    from mok_model.records import read_records
    recs = read_records([Path(__file__).resolve().parents[1] / "calibration" / "runs" / "published"
                         / "gb300_table1.jsonl"])
    kept = []

    def scored(z, keep):
        kept.append(keep)
        return np.asarray(z)[0] - 1.0 + 0.01 * np.arange(len(keep))
    lo, hi, x = np.array([0.0]), np.array([2.0]), np.array([1.0])
    block, _ = estimate_uncertainty(recs, scored, x, lo, hi, np.array([1.0]), ["gemm_eff"],
                                    "bootstrap", 40, 0)
    assert block["strata"] == 2 and block["groups"] == 5
    assert kept and all({recs[i]["pass"] for i in keep} == {"fwd", "bwd"} for keep in kept)
