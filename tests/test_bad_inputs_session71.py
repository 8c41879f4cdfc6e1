"""Session 71: faults a new user's audit of the CLI found. Each test is one: a valid workload
refused with numpy warnings and a self-contradicting memory message (rank 0 with no routed rows),
a NaN that could reach the tuner as "infeasible", `mok simulate` refusing a hardware file's own
degrade, an output file of another kind replaced by a command's output, a skew that spares the
emulated rank read as a faster layer without a word, a ring under one tile picked in silence, a
misspelled routing key, a file named twice, a raw Python value in an error. CPU only."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from cli_errors import one_error
from mok_model.cli import main

ROOT = Path(__file__).resolve().parent.parent
PARAMS = ROOT / "mok_model" / "params"
RUNS = ROOT / "calibration" / "runs" / "h200" / "bench_cli_v4.jsonl"
NO_ROWS = ["--hardware", "h200-1", "--model", "gpt-oss-120b", "--ep", "128", "--tokens", "1",
           "--routing", "zipf:1.2", "--seed", "1"]     # rank 0 receives no routed row


@pytest.mark.parametrize("cmd", ["predict", "simulate"])
def test_a_rank_without_rows_is_predicted_without_warnings(cmd, capsys):
    assert main([cmd, *NO_ROWS, "--json"]) == 0
    cap = capsys.readouterr()
    assert cap.err == "" and 0 < json.loads(cap.out)["latency_ms"] < 1.0


def test_a_nan_latency_is_an_internal_error_never_a_pick(monkeypatch, capsys):
    import mok_model.tuner as tuner
    real = tuner._grid_latency

    def nan_grid(*a, **k):
        lat, lag, overflow, evaluated = real(*a, **k)
        lat[::2] = np.nan
        return lat, lag, overflow, evaluated
    monkeypatch.setattr(tuner, "_grid_latency", nan_grid)
    assert main(["predict", "--hardware", "h200-hgx8", "--model", "kimi-k2", "--ep", "8",
                 "--tokens", "256"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("mok: internal error: the analytic model gave no number (NaN)")
    assert err.count("\n") == 1 and "Traceback" not in err


def test_simulate_takes_a_hardware_files_degrade(tmp_path, capsys):
    body = "\n".join(line for line in (ROOT / "mok_model" / "presets" / "hardware.toml")
                     .read_text().split("[h200-hgx8]", 1)[1].split("\n[", 1)[0].splitlines()
                     if line.strip() and not line.startswith(("name", "degrade")))
    healthy, hurt = tmp_path / "healthy.toml", tmp_path / "hurt.toml"
    healthy.write_text(f'name = "mine"\n{body}\n')
    hurt.write_text(f'name = "mine"\n{body}\ndegrade = "gpu0:0.5"\n')
    common = ["--model", "kimi-k2", "--ep", "8", "--tokens", "256", "--json",
              "--params", str(PARAMS / "h200-hgx8.json"), "--allow-params-mismatch"]
    got = {}
    for name, argv in (("healthy", ["--hardware", str(healthy)]), ("file", ["--hardware", str(hurt)]),
                       ("flag", ["--hardware", str(healthy), "--degrade", "gpu0:0.5"])):
        assert main(["simulate", *argv, *common]) == 0, capsys.readouterr().err
        got[name] = json.loads(capsys.readouterr().out)
    assert got["file"]["latency_ms"] == got["flag"]["latency_ms"] > got["healthy"]["latency_ms"]
    assert got["file"]["config"] == got["healthy"]["config"]    # knobs tuned on healthy links
    assert main(["predict", "--hardware", str(hurt), *common]) == 2    # analytic: refused
    assert "is a simulator what-if" in one_error(capsys.readouterr().err, "mok")


def test_calibrate_never_replaces_a_file_of_another_kind(tmp_path, capsys):
    table = tmp_path / "knobs.json"
    table.write_text('{"schema": "mok-knobs/1", "buckets": []}')
    before = table.read_text()
    assert main(["calibrate", str(RUNS), "--out", str(table), "--band", "none"]) == 2
    err = capsys.readouterr().err
    assert "exists and holds 'mok-knobs/1', not 'mok-params/1'" in err and err.count("\n") == 1
    assert table.read_text() == before and not (tmp_path / "fit").exists()


def test_validate_plot_replaces_a_png_only(tmp_path, capsys):
    plot = tmp_path / "p.png"
    plot.write_text('{"schema": "mok-params/1"}')
    assert main(["validate", str(RUNS), "--params", str(PARAMS / "h200-1.json"),
                      "--plot", str(plot)]) == 2
    assert "not 'png'" in capsys.readouterr().err
    assert plot.read_text() == '{"schema": "mok-params/1"}'


def _said_before_writing(monkeypatch, capsys, module, writer: str, argv: list[str]) -> None:
    """Run `mok argv`, catching stderr when module.writer is called: the "will be replaced"
    warning must be out by then (it came after the write, held back to the command's end)."""
    seen, real = [], getattr(module, writer)
    monkeypatch.setattr(module, writer,
                        lambda *a, **k: (seen.append(capsys.readouterr().err), real(*a, **k))[1])
    assert main(argv) == 0
    assert seen and "it will be replaced" in seen[0]


def test_replaced_table_is_said_before_it_is_written(tmp_path, capsys, monkeypatch):
    import mok_kernels.knobs as knobs
    table = tmp_path / "t.json"
    table.write_text('{"schema": "mok-knobs/1"}')
    _said_before_writing(monkeypatch, capsys, knobs, "write_table",
                         ["tune", "--hardware", "h200-hgx8", "--model", "deepseek-v3", "--ep", "8",
                          "--table", str(table), "--tokens-buckets", "64"])


def test_a_routing_that_spares_rank_0_says_so(capsys):
    base = ["predict", "--hardware", "h200-1", "--model", "mixtral-8x7b", "--ep", "8",
            "--tokens", "4096", "--json"]
    assert main([*base, "--routing", "uniform"]) == 0
    assert not any("spares rank 0" in n for n in json.loads(capsys.readouterr().out)["notes"])
    assert main([*base, "--routing", "hot:0.001"]) == 0    # expert 0 (rank 0's) is cold
    notes = json.loads(capsys.readouterr().out)["notes"]
    assert any(n.startswith("the routing spares rank 0: it receives") for n in notes)


def test_a_ring_under_one_tile_is_warned_about(capsys):
    assert main(["predict", "--hardware", "h200-1", "--model", "kimi-k2", "--ep", "8",
                 "--tokens", "512", "--macrobatch", "64"]) == 0
    assert "mok: warning: --macrobatch 64 is below one 128-row GEMM tile" in capsys.readouterr().err


def _one_record(tmp_path: Path, **change) -> str:
    rec = next(r for r in map(json.loads, RUNS.read_text().splitlines()) if r["system"] == "mok")
    rec.update(change)
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(rec) + "\n")
    return str(path)


@pytest.mark.parametrize("routing, want", [
    ({"kind": "hot", "f": 0.5, "seed": 0}, "routing.f is not a key of a hot routing"),
    ({"kind": "uniform", "arg": 3, "seed": 0}, "routing.arg is not a key of a uniform routing")])
def test_a_misspelled_routing_key_is_refused(tmp_path, capsys, routing, want):
    path = _one_record(tmp_path, routing=routing)
    assert main(["validate", path, "--params", str(PARAMS / "h200-1.json")]) == 2
    assert want in one_error(capsys.readouterr().err, "mok")


def test_a_file_named_twice_is_refused_as_such(tmp_path, capsys):
    path = _one_record(tmp_path)
    twice = [path, str(tmp_path / "." / "r.jsonl")]
    assert main(["validate", *twice, "--params", str(PARAMS / "h200-1.json")]) == 2
    assert "is named twice (first as" in one_error(capsys.readouterr().err, "mok")


def test_a_leaf_of_a_one_tier_fabric_is_named_plainly(capsys):
    assert main(["simulate", "--hardware", "h200-hgx8", "--model", "kimi-k2", "--ep", "8",
                 "--tokens", "256", "--degrade", "leaf0.0:0.5"]) == 2
    err = one_error(capsys.readouterr().err, "mok")
    assert "has no such leaf (it has one switch tier, no leaves)" in err and "False" not in err


def test_a_replaced_trace_is_said_before_it_is_written(tmp_path, capsys, monkeypatch):
    import mok_model.sim.trace as trace
    f = tmp_path / "t.json"
    f.write_text('{"traceEvents": []}')
    _said_before_writing(monkeypatch, capsys, trace, "atomic_write_text",
                         ["simulate", "--hardware", "h200-hgx8", "--model", "kimi-k2", "--ep", "8",
                          "--tokens", "256", "--trace", str(f)])


# ------------------------------------------------------------------ the Python API (mok_model)

def _api():
    from mok_model.params import load_params
    from mok_model.presets import load_hardware, load_model
    from mok_model.scenario import Config, Scenario
    s = Scenario(load_hardware("h200-1"), load_model("kimi-k2"), 16, 1024)
    return s, load_params(None, "h200-1"), Config(comm_sms=32, macrobatch=16384, capacity=0.25)


@pytest.mark.parametrize("change", [{"link_eff": float("nan")}, {"mok_fixed_us": -1e6},
                                    {"link_eff": 0.0}, {"mok_fixed_us": "x"}, {"mok_fixed_us": True}])
def test_with_values_keeps_a_parameter_in_its_bounds(change):
    """NaN and negative latencies came out of a NaN link efficiency and a negative fixed cost."""
    from mok_model.errors import MokInputError
    _, p, _ = _api()
    with pytest.raises(MokInputError, match="with_values: .* must be a number in"):
        p.with_values(**change)
    from mok_model.params import BOUNDS
    hi = BOUNDS["link_eff"][1]
    assert p.with_values(link_eff=hi * (1 + 1e-12))["link_eff"] == hi   # a rounding: put back


def test_a_band_comes_from_the_prediction_own_parameters():
    from mok_model.errors import MokInputError
    from mok_model.params import load_params
    from mok_model.predict import predict
    s, p, c = _api()
    pred = predict(s, c, params=p)
    with pytest.raises(MokInputError, match="with_band: the band comes from the parameters"):
        pred.with_band(load_params(None, "h100-1"))
    assert pred.with_band(p).band is not None


def test_a_gemm_table_of_another_gpu_is_refused(tmp_path):
    from mok_model.errors import MokInputError
    from mok_model.params import read_params
    doc = json.loads((PARAMS / "h200-1.json").read_text())
    doc["gemm_table"] = str(PARAMS / "gemm" / "h100-1.json")
    (tmp_path / "p.json").write_text(json.dumps(doc))
    with pytest.raises(MokInputError, match=r"measured on h100-1 \(H100 SXM\), the parameters are for h200-1"):
        read_params(tmp_path / "p.json")
    assert read_params(PARAMS / "h100-hgx8.json").gemm_table is not None   # one GPU: taken


@pytest.mark.parametrize("kwargs, want", [
    ({"system": "deepep"}, "system deepep has no MoK knobs"),
    ({"merge_s": 1e-3}, "merge_s=0.001 must be None"),
    ({"schedule": "fast"}, "schedule 'fast' must be one of"),
    ({"chunk_bytes": 0}, "chunk_bytes=0 must be"),
    ({"max_peers": 0}, "max_peers=0 must be"),
    ({"refuse_overflow": "no"}, "refuse_overflow='no' must be True or False")])
def test_simulate_refuses_its_arguments_in_one_line(kwargs, want):
    from mok_model.errors import MokInputError
    from mok_model.sim import simulate
    s, p, c = _api()
    with pytest.raises(MokInputError, match=want.replace("(", r"\(")):
        simulate(s.with_(ep=8), c, params=p, **kwargs)
    with pytest.raises(MokInputError, match="must be a Config or None"):
        simulate(s, {"minibatch": 512}, params=p)
    with pytest.raises(MokInputError, match="must be a mok_model Scenario"):
        simulate(None)


def test_the_searches_refuse_what_is_not_a_scenario_or_lags():
    from mok_model.errors import MokInputError
    from mok_model.predict import predict
    from mok_model.tuner import tune
    s, p, _ = _api()
    for call in (lambda: predict("h200-1"), lambda: tune(None, p), lambda: tune(s, p, list_lags=2)):
        with pytest.raises(MokInputError):
            call()


@pytest.mark.parametrize("args, want", [
    (("uniform", 2, 4, 8, 2, None), "seed=None must be a whole number >= 0"),
    (("uniform", 2, 0, 8, 2, 0), "tokens=0 must be"),
    (("uniform", 2, 4, 4, 8, 0), "experts=4 must be a whole number >= 8"),
    (("hot:0.1", 2, 4, 8, 0, 0), "top_k=0 must be a whole number >= 1")])
def test_make_routing_refuses_what_it_cannot_draw_the_same_way_twice(args, want):
    from mok_model.errors import MokInputError
    from mok_model.workload import make_routing
    with pytest.raises(MokInputError, match=want):
        make_routing(*args)


# ------------------------------------------------------------------ the calibration tools

def test_gemm_table_keeps_another_hardwares_table_and_takes_gemm_phases_only(tmp_path, capsys):
    from calibration.gemm_table import main as gemm_table
    out = tmp_path / "t.json"
    out.write_text((PARAMS / "gemm" / "h100-1.json").read_text())
    before = out.read_text()
    phases = str(ROOT / "calibration" / "runs" / "h100" / "gemm_phases_drawn21.jsonl")
    assert gemm_table([phases, "--hardware", "h200-1", "--system", "mok-gemm", "--out", str(out)]) == 2
    assert "is a GEMM table of h100-1, not of --hardware h200-1" in capsys.readouterr().err
    assert out.read_text() == before
    layer = str(ROOT / "calibration" / "runs" / "h100" / "drawn35.jsonl")
    assert gemm_table([layer, "--hardware", "h100-1", "--system", "mok", "--out",
                       str(tmp_path / "y.json")]) == 2
    assert "--system 'mok': records of GEMM phases alone" in capsys.readouterr().err


def test_archive_leaves_a_read_only_folder_alone(tmp_path, capsys):
    import os

    from calibration.archive import main as archive
    ro = tmp_path / "ro"
    ro.mkdir()
    f = ro / "x.jsonl"
    f.write_text("".join(RUNS.read_text().splitlines(keepends=True)[:3]))
    os.chmod(ro, 0o555)
    try:
        assert archive([str(f)]) == 2
        assert "it or its folder is read-only" in capsys.readouterr().err
        assert f.exists() and not (ro / "x.jsonl.gz").exists()
    finally:
        os.chmod(ro, 0o755)


def test_first_timed_says_when_there_is_nothing_to_report(tmp_path, capsys):
    from calibration.first_timed import main as first_timed
    once = tmp_path / "once.jsonl"
    once.write_text(next(line for line in RUNS.read_text().splitlines() if '"system": "mok"' in line)
                    + "\n")
    assert first_timed([str(once)]) == 2
    assert "nothing to report" in capsys.readouterr().err


def test_another_cards_records_are_said_to_be_left_out(tmp_path, capsys):
    """report_unseen and heldout_errors dropped another hardware's MoK records without a word."""
    from calibration.heldout_errors import main as heldout_errors
    from calibration.report_unseen import main as report_unseen
    h100 = [json.loads(x) for x in (ROOT / "calibration" / "runs" / "h100" / "drawn35.jsonl")
            .read_text().splitlines()[:8]]
    h200 = [dict(r, id="h200-" + r["id"], hardware=dict(r["hardware"], preset="h200-1",
                                                         gpu="NVIDIA H200")) for r in h100]
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text("".join(json.dumps(r) + "\n" for r in h100 + h200))
    n = sum(r["system"] == "mok" for r in h200)
    assert report_unseen([str(mixed), "--hardware", "h100-1"]) == 0
    assert f"{n} MoK records of other hardware (h200-1) left out" in capsys.readouterr().err
    assert heldout_errors(["--hardware", "h100-1", "--out", str(tmp_path / "h.json"), str(mixed)]) == 0
    assert f"{n} MoK records of other hardware than h100-1 left out" in capsys.readouterr().err
