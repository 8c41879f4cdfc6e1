"""calibration/fit_fabric.py recovers known fabric parameters from synthetic NVLink records."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid

import numpy as np
import pytest

from calibration.fit_fabric import fit_fabric, main
from mok_model.params import PARAMS_DIR, read_fit_record, read_params
from mok_model.presets import load_hardware
from mok_model.records import append_records, read_records

HW = load_hardware("h200-hgx8")
LINK = HW.link_gbps  # 450
TRUTH = {"copy_gbps_per_sm": 21.0, "push_copy_scale": 0.8, "link_eff": 0.74,
         "signal_remote_us": 1.35, "push_signal_per_peer_us": 0.22}
PULL_SAT, PUSH_SAT = 0.81 * LINK, 0.86 * LINK  # one-way saturation (link_eff is the bidir share)
SMS = (1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 132)
NBYTES = 8192 * 7168 * 2


def _rec(system, ms, metrics, emulated=False):
    preset = "h200-1" if emulated else "h200-hgx8"
    return {"schema": "mok-run/1", "id": f"{system}-{uuid.uuid4().hex[:10]}", "date": "2025-01-01T00:00:00+00:00",
            "hardware": {"preset": preset, "gpu": "NVIDIA H200", "gpus": 2, "sms": 132,
                         "fabric": "local-hbm" if emulated else "nvlink4", "driver": "cuda 13.0"},
            "software": {"torch": "2.11", "triton": "3.6", "commit": "test"}, "system": system,
            "model": {"hidden": 7168}, "ep": 2, "emulated_peers": emulated, "tokens": 8192, "pass": "fwd",
            "precision": "bf16", "config": {}, "routing": {"kind": "uniform", "seed": 0},
            "latency_ms": {"median": ms, "p10": ms * 0.99, "p90": ms * 1.01, "n": 10, "samples": [ms] * 10},
            "breakdown_ms": {}, "metrics": metrics, "source": "measured", "note": "synthetic"}


def synthetic(truth=TRUTH, noise=0.01, seed=0, emulated=False, sig_peers=(1, 2, 4, 8, 16)):
    """Records as nvlink_bench.py writes them, timed by the model's formulas from `truth`,
    with multiplicative noise."""
    rng = np.random.default_rng(seed)
    jit = lambda: float(np.exp(rng.normal(0, noise)))  # noqa: E731
    out = []
    for d, rate, sat in (("pull", truth["copy_gbps_per_sm"], PULL_SAT),
                         ("push", truth["copy_gbps_per_sm"] * truth["push_copy_scale"], PUSH_SAT)):
        for s in SMS:
            ms = NBYTES / min(s * rate * 1e9, sat * 1e9) * 1e3 * jit()
            out.append(_rec("micro-nvlink-copy", ms, {"direction": d, "sms": s, "bytes": NBYTES}, emulated))
    for d in ("push", "pull"):
        ms = NBYTES / (truth["link_eff"] * LINK * 1e9) * 1e3 * jit()
        out.append(_rec("micro-nvlink-bidir", ms, {"direction": d, "sms": 132, "bytes": NBYTES}, emulated))
    for p in sig_peers:
        us = (2 * truth["signal_remote_us"] + (p - 1) * truth["push_signal_per_peer_us"]) * jit()
        out.append(_rec("micro-nvlink-signal", us * 1e-3, {"peers": p, "roundtrip_us": us}, emulated))
    out.append(_rec("micro-nvlink-gemm-copy", 3.0, {"copy_sms": 16, "ratio": 0.9,
                                                    "copy_outlasted_gemm": True}, emulated))
    return out


def _base():
    return read_params(PARAMS_DIR / "h200-hgx8.json")


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fit_recovers_known_parameters(seed):
    res = fit_fabric(synthetic(seed=seed), _base(), HW)
    assert set(res.fitted) == set(TRUTH)
    for name, want in TRUTH.items():
        got = res.params[name]
        tol = 0.08 if name == "push_signal_per_peer_us" else 0.03   # a slope over 1% noise
        assert got == pytest.approx(want, rel=tol), (name, got, want)
    # the one-way saturation is measured too, and reported
    assert res.measurements["copy_pull"]["saturated_gbps"] == pytest.approx(PULL_SAT, rel=0.03)
    assert res.measurements["copy_push"]["saturated_gbps"] == pytest.approx(PUSH_SAT, rel=0.03)


def test_fit_is_exact_without_noise():
    res = fit_fabric(synthetic(noise=0.0), _base(), HW)
    for name, want in TRUTH.items():
        assert res.params[name] == pytest.approx(want, rel=1e-3), name
    assert max(abs(r["rel_error"]) for r in res.residuals) < 1e-3


def test_other_truth_moves_the_fit():
    """Guard against a fit that returns constants: a different truth gives different values."""
    other = {"copy_gbps_per_sm": 9.0, "push_copy_scale": 0.55, "link_eff": 0.6,
             "signal_remote_us": 2.6, "push_signal_per_peer_us": 0.9}
    res = fit_fabric(synthetic(truth=other, noise=0.0), _base(), HW)
    for name, want in other.items():
        assert res.params[name] == pytest.approx(want, rel=1e-3), name


def test_priors_kept_where_nothing_was_measured():
    sig_only = [r for r in synthetic(noise=0.0) if r["system"] == "micro-nvlink-signal"][:1]
    base = _base()
    res = fit_fabric(sig_only, base, HW)
    assert set(res.fitted) == {"signal_remote_us"}
    assert res.params["copy_gbps_per_sm"] == base["copy_gbps_per_sm"]
    assert res.params["push_signal_per_peer_us"] == base["push_signal_per_peer_us"]
    assert any("one slot count only" in n for n in res.notes)


def test_push_faster_than_pull_is_clipped_and_said():
    truth = dict(TRUTH, push_copy_scale=1.3)
    res = fit_fabric(synthetic(truth=truth, noise=0.0), _base(), HW)
    assert res.params["push_copy_scale"] == 1.0
    assert any("push_copy_scale" in n and "clipped" in n for n in res.notes)


def test_cli_writes_params_with_provenance(tmp_path, capsys):
    runs = tmp_path / "nvlink.jsonl"
    append_records(runs, synthetic(seed=3))
    out = tmp_path / "h200-hgx8.json"
    assert main([str(runs), "--out", str(out)]) == 0
    p = read_params(out)
    base = _base()
    assert p.hardware == "h200-hgx8" and str(runs) in p.fitted_on
    for name in TRUTH:
        assert p.sources[name].startswith("measured:") and str(runs) in p.sources[name]
        assert "calibration.fit_fabric" in p.sources[name]
    # everything not measured is the base's value with the base's source
    for name in ("gemm_eff", "hbm_eff", "signal_local_us", "minibatch_overhead_us"):
        assert p[name] == base[name] and p.sources[name] == base.sources[name]
    fabric = read_fit_record(out)["fabric_fit"]
    ids = {r["id"] for r in read_records([runs]) if r["system"] == "micro-nvlink-signal"}
    assert set(fabric["fitted"]["push_signal_per_peer_us"]["records"]) == ids
    assert fabric["measurements"]["gemm_beside_copy"][0]["copy_sms"] == 16
    # the fitted file drives the model
    r = subprocess.run([sys.executable, "-m", "mok_model.cli", "predict", "--hardware", "h200-hgx8",
                        "--model", "kimi-k2", "--ep", "8", "--tokens", "256", "--params", str(out),
                        "--json"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["latency_ms"] > 0


def test_cli_refuses_emulated_records(tmp_path, capsys):
    runs = tmp_path / "emu.jsonl"
    append_records(runs, synthetic(emulated=True))
    assert main([str(runs), "--out", str(tmp_path / "x.json")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("python -m calibration.fit_fabric: error:") and "emulated_peers" in err
    assert len(err.splitlines()) == 1
    assert not (tmp_path / "x.json").exists()


def test_cli_refuses_mixed_hardware(tmp_path, capsys):
    runs = tmp_path / "mixed.jsonl"
    recs = synthetic()
    recs[0]["hardware"] = dict(recs[0]["hardware"], preset="h100-hgx8")
    append_records(runs, recs)
    assert main([str(runs), "--out", str(tmp_path / "x.json")]) == 2
    assert "--hardware" in capsys.readouterr().err
