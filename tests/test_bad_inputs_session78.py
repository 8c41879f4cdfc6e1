"""Session 78's fuzz pass of the code changed since 2026-12-06 15:00: each test is one fault
found. GEMM tables whose mechanism constants, curve values or (schema 1) points were far
outside any GPU's (latencies of 10^300 ms, divisions by zero, internal errors);
`calibration.gemm_table --out` over an existing `[]` (AttributeError); `calibration.registered
--drift-from` taking another card's re-runs; `sim.simulate(trace=...)` from Python writing over
any existing .json. CPU only; nothing is written into the repository."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from cli_errors import one_error
from mok_model.cli import main

ROOT = Path(__file__).resolve().parent.parent
PARAMS = ROOT / "mok_model" / "params"
GEMM_PHASES = ROOT / "calibration" / "runs" / "h200_space" / "gemm_phases.jsonl.gz"
PREDICT = ["predict", "--hardware", "h200-1", "--model", "kimi-k2", "--ep", "8", "--tokens",
           "8192", "--json"]


def _params_with_mechanism(tmp_path: Path, **changes) -> Path:
    """A copy of h200-1's parameters and GEMM table (its points file beside), the table's
    mechanism constants changed."""
    (tmp_path / "gemm").mkdir()
    shutil.copytree(PARAMS / "gemm" / "points", tmp_path / "gemm" / "points")
    shutil.copy(PARAMS / "h200-1.json", tmp_path / "h200-1.json")
    doc = json.loads((PARAMS / "gemm" / "h200-1.json").read_text())
    doc["mechanism"].update(changes)
    (tmp_path / "gemm" / "h200-1.json").write_text(json.dumps(doc))
    return tmp_path / "h200-1.json"


@pytest.mark.parametrize("key,value", [("sustain_loss", 1e300), ("launch_us", 1e300),
                                       ("tensor_eff", 1e-300), ("hbm_gbps", 1e-300),
                                       ("item_us", 1e300), ("sustain_ms", 1e-300)])
def test_a_gemm_tables_mechanism_far_outside_any_gpu_is_refused(tmp_path, capsys, key, value):
    """Each was read: a latency of 5e302 ms (tensor_eff 1e-300), 1e304 ms (hbm_gbps 1e-300),
    819 ms for 10.5 (sustain_ms 1e-300), or numpy's divide-by-zero warnings and 1.79 ms
    (launch_us 1e300), exit 0."""
    params = _params_with_mechanism(tmp_path, **{key: value})
    assert main([*PREDICT, "--params", str(params)]) == 2
    err = one_error(capsys.readouterr().err)
    assert f"mechanism {key}={value!r} must be in [" in err and "plausible range" in err


def test_gemm_table_out_over_an_empty_json_list(tmp_path, capsys):
    """An existing --out holding `[]` (nothing to lose: check_output_file lets it be replaced)
    ended in AttributeError: 'list' object has no attribute 'get'."""
    from calibration import gemm_table
    out = tmp_path / "t.json"
    out.write_text("[]\n")
    rc = gemm_table.main([str(GEMM_PHASES), "--out", str(out), "--hardware", "h200-1",
                          "--system", "mok-gemm"])
    cap = capsys.readouterr()
    assert rc == 0 and "Traceback" not in cap.err, cap.err[-600:]
    assert json.loads(out.read_text())["hardware"] == "h200-1"


@pytest.mark.parametrize("value", [1e300, 1e-300])
def test_a_gemm_tables_curve_value_far_outside_any_gpu_is_refused(tmp_path, capsys, value):
    """A shape's curve values of 1e300 printed a latency of 10^300 ms; of 1e-300, numpy's
    overflow warning and a latency, exit 0."""
    params = _params_with_mechanism(tmp_path)
    table = tmp_path / "gemm" / "h200-1.json"
    doc = json.loads(table.read_text())
    for shape in doc["curves"]["shapes"]:
        shape["values"] = [value] * len(shape["values"])
    table.write_text(json.dumps(doc))
    assert main([*PREDICT, "--params", str(params)]) == 2
    err = one_error(capsys.readouterr().err)
    assert f"values[0]={value!r} must be in [0.001, 100]" in err


def _schema1_table(tmp_path: Path, edit) -> Path:
    """h200-1's parameters naming a GEMM table of schema mok-gemm-table/1 (its points in the
    file, its curves made of them when read): h200-1's points, each passed through edit."""
    params = _params_with_mechanism(tmp_path)
    shipped = json.loads((PARAMS / "gemm" / "h200-1.json").read_text())
    points = json.loads((PARAMS / "gemm" / "points" / "h200-1.json").read_text())["points"]
    for pt in points:
        edit(pt)
    (tmp_path / "gemm" / "h200-1.json").write_text(json.dumps({
        "schema": "mok-gemm-table/1", "hardware": "h200-1", "level": "absolute",
        "mechanism": shipped["mechanism"], "records": shipped["records"], "points": points}))
    return params


@pytest.mark.parametrize("edit,why", [
    # a latency of 10^300 ms, exit 0
    (lambda pt: pt.update(measured_ms=1e300), "point 0: measured_ms=1e+300 must be a time in"),
    # mok: internal error: ValueError, exit 1
    (lambda pt: pt.update(measured_ms="x"), "point 0: measured_ms='x' must be a time in"),
    # numpy's divide-by-zero warnings, then an internal error (NaN), exit 1
    (lambda pt: pt["mech"].update(sms=0), "point 0: mech sms=0 must be a whole number in [1, "),
    # mok: internal error: TypeError, exit 1
    (lambda pt: pt["mech"].update(gu="bad"), "point 0: mech gu='bad' must be a list of"),
])
def test_a_schema1_gemm_tables_bad_point_is_refused(tmp_path, capsys, edit, why):
    params = _schema1_table(tmp_path, edit)
    assert main([*PREDICT, "--params", str(params)]) == 2
    assert why in one_error(capsys.readouterr().err)


def test_a_schema1_gemm_tables_curves_are_held_to_the_range(tmp_path, capsys):
    """A point measured at 10^6 ms (a run record's largest time) made a curve value of 2.7e6."""
    params = _schema1_table(tmp_path, lambda pt: pt.update(measured_ms=1e6))
    assert main([*PREDICT, "--params", str(params)]) == 2
    err = one_error(capsys.readouterr().err)
    assert "(made of its points): curves shape 0: values[0]=" in err and "[0.001, 100]" in err


def test_registered_refuses_another_cards_drift(capsys):
    """`calibration.registered --drift-from` read an H100 sweep and its re-run as the drift of
    an H200 registration's runs without a word (session 78's fuzz pass): a floor of the wrong card."""
    from calibration.registered import main as registered

    h100 = ROOT / "calibration" / "runs" / "h100"
    argv = [str(ROOT / "calibration" / "predictions" / "h200_drawn35_2026-12-06.jsonl"),
            str(ROOT / "calibration" / "runs" / "h200_drawn" / "drawn35.jsonl.gz"),
            "--drift-from", str(h100 / "drawn22.jsonl.gz"), str(h100 / "drawn22_rerun.jsonl.gz")]
    assert registered(argv) == 2
    err = one_error(capsys.readouterr().err, "python -m calibration.registered")
    assert "runs of h100-1, but h200_drawn35_2026-12-06.jsonl registers h200-1" in err


def test_simulate_from_python_never_replaces_a_file_that_is_not_a_trace(tmp_path):
    """mok_model.sim.simulate(trace=...) wrote its trace over any existing .json (a parameters
    file, say); the command line refused it (session 78's fuzz pass). A trace it replaces."""
    from mok_model.errors import MokInputError
    from mok_model.presets import load_hardware, load_model
    from mok_model.scenario import Scenario
    from mok_model.sim import simulate

    scn = Scenario(load_hardware("h200-hgx8"), load_model("mixtral-8x7b"), 8, 256)
    params = tmp_path / "params.json"
    params.write_text(json.dumps({"schema": "mok-params/1"}))
    with pytest.raises(MokInputError, match="exists and holds 'mok-params/1'"):
        simulate(scn, trace=params)
    assert json.loads(params.read_text()) == {"schema": "mok-params/1"}
    trace = tmp_path / "t.json"
    simulate(scn, trace=trace)
    simulate(scn, trace=trace)          # its own kind: replaced
    assert "traceEvents" in json.loads(trace.read_text())


def test_simulate_trace_over_a_trace_warns_once(tmp_path, capsys):
    """`mok simulate --trace T.json` over an existing trace: one "will be replaced" line, though
    the command and the engine both check the path."""
    trace = tmp_path / "t.json"
    argv = ["simulate", "--hardware", "h200-hgx8", "--model", "mixtral-8x7b", "--ep", "8",
            "--tokens", "256", "--trace", str(trace)]
    assert main(argv) == 0
    capsys.readouterr()
    assert main(argv) == 0
    assert capsys.readouterr().err.count("will be replaced") == 1
