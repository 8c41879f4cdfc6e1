"""The held-out range of a prediction (mok_model/heldout.py) and the tool that measures it
(calibration/heldout_errors.py): the range's arithmetic, its refusal of parameters it was not
measured with, the shipped file matching the shipped parameters, and the CLI showing it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from calibration.heldout_errors import main as heldout_main
from mok_model.heldout import (HELDOUT_DIR, MIN_RUNS, SCHEMA, fingerprint, group_key,
                               heldout_range, read_heldout)
from mok_model.params import load_params
from mok_model.predict import predict
from mok_model.presets import load_hardware, load_model
from mok_model.scenario import Scenario

REPO = Path(__file__).resolve().parents[1]
DRAWN6 = REPO / "calibration" / "runs" / "h200_drawn" / "drawn6.jsonl.gz"


def _scenario(tokens: int = 1024) -> Scenario:
    return Scenario(load_hardware("h200-1"), load_model("kimi-k2"), 16, tokens)


def _doc(params, groups: dict) -> dict:
    return {"schema": SCHEMA, "hardware": "h200-1", "made": "2026-12-02", "command": "cmd",
            "files": ["x.jsonl"], "fingerprint": fingerprint(params), "groups": groups}


def test_the_range_divides_the_prediction_by_one_plus_each_quantile(tmp_path):
    params = load_params(None, "h200-1")
    pred = predict(_scenario(), None, "mok", params)
    key = group_key("analytic", "fwd", "bf16", 1024)
    (tmp_path / "h200-1.json").write_text(json.dumps(_doc(params, {key: {
        "n": 40, "mape": 0.05, "q05": -0.2, "q50": 0.0, "q95": 0.1}})))
    r = heldout_range(pred, params, tmp_path)
    # a prediction 20% fast means the run took p / 0.8; 10% slow, p / 1.1
    assert r.lo == pytest.approx(pred.latency_ms / 1.1) and r.hi == pytest.approx(pred.latency_ms / 0.8)
    assert r.n == 40 and "held-out runs" in r.text()
    # another token regime, too few runs, a baseline: no range, and the note says why
    small = predict(_scenario(128), None, "mok", params)
    assert heldout_range(small, params, tmp_path).lo is None
    doc = json.loads((tmp_path / "h200-1.json").read_text())
    doc["groups"][key]["n"] = MIN_RUNS - 1
    (tmp_path / "h200-1.json").write_text(json.dumps(doc))
    assert "a range needs" in heldout_range(pred, params, tmp_path).note
    base = predict(_scenario(), None, "nccl-torch", params)
    assert "nccl-torch" in heldout_range(base, params, tmp_path).note


def test_parameters_it_was_not_measured_with_get_no_range(tmp_path):
    params = load_params(None, "h200-1")
    pred = predict(_scenario(), None, "mok", params)
    key = group_key("analytic", "fwd", "bf16", 1024)
    doc = _doc(params, {key: {"n": 40, "mape": 0.05, "q05": -0.2, "q50": 0.0, "q95": 0.1}})
    doc["fingerprint"] = {**doc["fingerprint"], "params": "0" * 64}  # a refit since
    (tmp_path / "h200-1.json").write_text(json.dumps(doc))
    r = heldout_range(pred, params, tmp_path)
    assert r.lo is None and "rerun cmd" in r.note
    changed = params.with_values(mok_fixed_us=params["mok_fixed_us"] + 1.0)
    assert heldout_range(predict(_scenario(), None, "mok", changed), changed, tmp_path).lo is None


def test_a_malformed_file_is_refused_in_one_line(tmp_path):
    from mok_model.errors import MokInputError

    bad = tmp_path / "h200-1.json"
    bad.write_text(json.dumps({"schema": SCHEMA, "hardware": "h200-1"}))
    with pytest.raises(MokInputError, match="missing 'fingerprint'"):
        read_heldout(bad)


@pytest.mark.parametrize("hardware", ["h200-1", "h100-1"])
def test_the_shipped_range_belongs_to_the_shipped_parameters(hardware):
    """A refit must be followed by `python -m calibration.heldout_errors --hardware H` (else
    predictions would show a range measured with other parameters: they show none, and this
    fails); h100-1 is rewritten from h200-1 by every refit (calibration.transfer)."""
    path = HELDOUT_DIR / f"{hardware}.json"
    assert path.is_file(), f"run python -m calibration.heldout_errors --hardware {hardware}"
    doc = read_heldout(path)
    assert doc["fingerprint"] == fingerprint(load_params(None, hardware)), \
        f"stale: rerun python -m calibration.heldout_errors --hardware {hardware} after the refit"
    groups = [g for g in doc["groups"].values() if g["n"] >= MIN_RUNS]
    assert len(groups) >= 4 and all(g["q05"] < g["q50"] < g["q95"] for g in groups)
    assert all((REPO / f).is_file() for f in doc["files"])


def test_the_tool_measures_a_file_and_refuses_bad_flags(tmp_path, capsys):
    out = tmp_path / "e.json"
    assert heldout_main([str(DRAWN6), "--out", str(out), "--sim-every", "40"]) == 0
    doc = read_heldout(out)
    an = doc["groups"]["analytic fwd bf16 >512"]
    assert an["n"] > 30 and -0.5 < an["q05"] < 0 < an["q95"] < 0.5
    assert doc["groups"]["sim fwd bf16 >512"]["n"] < an["n"]
    assert heldout_main([str(DRAWN6), "--sim-every", "0", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == ("python -m calibration.heldout_errors: error: argument --sim-every: 0 must "
                       "be an integer >= 1 (see `python -m calibration.heldout_errors --help`)")


def test_coverage_leaves_each_file_out_and_writes_nothing(tmp_path, capsys):
    drawn5 = DRAWN6.with_name("drawn5.jsonl.gz")
    assert heldout_main(["--coverage", "--sim-every", "1000", str(DRAWN6), str(drawn5)]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert [ln.split(":")[0] for ln in lines] == [str(drawn5), str(DRAWN6), "all"]  # sorted
    inside, n = (int(x) for x in lines[-1].split()[1:4:2])
    # 240 MoK records less the 52 push/push of the kernel with runtime mode words
    assert n >= 120 and 0.6 * n < inside <= n   # a 90% range holds most of a new file's runs
    assert heldout_main(["--coverage", "--out", str(tmp_path / "x.json"), str(DRAWN6)]) == 2
    assert not (tmp_path / "x.json").exists()


def test_predict_shows_the_range():
    r = subprocess.run([sys.executable, "-m", "mok_model.cli", "predict", "--hardware", "h200-1",
                        "--model", "kimi-k2", "--ep", "16", "--tokens", "2048", "--json"],
                       capture_output=True, text=True, cwd=REPO, timeout=120,
                       env={**os.environ, "PYTHONPATH": str(REPO)})
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["heldout_ms"]["lo"] < d["latency_ms"] < d["heldout_ms"]["hi"]
    assert d["heldout_ms"]["n"] >= 20 and "analytic fwd bf16 >512" in d["heldout_note"]


def test_a_missing_fit_record_is_one_line(tmp_path):
    """A parameters file copied without the fit record it names (params/fit/NAME): reading the
    record (validate --heldout-only, reports) says so in one line, no traceback."""
    import shutil

    from mok_model.errors import MokInputError
    from mok_model.params import PARAMS_DIR, read_fit_record
    shutil.copy(PARAMS_DIR / "h200-1.json", tmp_path / "h200-1.json")
    with pytest.raises(MokInputError, match="fit record 'fit/h200-1.json' is missing"):
        read_fit_record(tmp_path / "h200-1.json")


def test_no_held_out_run_is_read_by_the_fit():
    """The held-out ranges are made of runs h200-1's fits never read (calibration/defaults.py
    H200_RUNS and today's kernel's H200_PASS_RUNS), and the day's held-out drawn seeds and
    preset runs are among them."""
    from calibration.defaults import H200_PASS_RUNS, H200_RUNS
    from calibration.heldout_errors import HELDOUT_RUNS, ROOT
    fitted = {str(p.resolve().relative_to(ROOT)) for p in [*H200_RUNS, *H200_PASS_RUNS]}
    held = set(HELDOUT_RUNS["h200-1"])
    assert not held & fitted
    assert {"calibration/runs/h200_drawn/drawn14_pipe.jsonl.gz",
            "calibration/runs/h200_drawn/drawn28.jsonl.gz",
            "calibration/runs/h200_drawn/drawn33.jsonl.gz"} <= fitted
    assert {"calibration/runs/h200_drawn/drawn15_pipe.jsonl.gz",
            "calibration/runs/h200_drawn/drawn16_runs.jsonl.gz",
            "calibration/runs/h200_drawn/drawn34.jsonl.gz",
            "calibration/runs/h200_drawn/drawn41.jsonl.gz",
            "calibration/runs/h200_space/presets_zipf_ep16_s41.jsonl.gz"} <= held


def test_a_refit_keeps_the_earlier_fits_columns_for_what_it_held():
    """defaults.beside_held: a refit's bootstrap columns first, then the columns of the values it
    held from the block it started from (paired by index, as many samples as both have), and a
    transferred block marked with its source."""
    from calibration.defaults import beside_held
    base = {"free": ["a", "b", "c"], "n": 3, "summary": {"a": 1, "b": 2, "c": 3}, "held": "h",
            "samples": [[1, 2, 3], [4, 5, 6], [7, 8, 9]]}
    own = {"free": ["b"], "n": 2, "summary": {"b": 20}, "held": "refit", "samples": [[20], [50]]}
    out = beside_held(own, base)
    assert out["free"] == ["b", "a", "c"] and out["n"] == 2
    assert out["samples"] == [[20, 1, 3], [50, 4, 6]]
    assert out["summary"] == {"a": 1, "b": 20, "c": 3} and "transferred_from" not in out
    assert out["held"].startswith("refit; the columns of values this fit held are the earlier")
    moved = beside_held(own, base, "h200-1")
    assert moved["transferred_from"] == "h200-1" and moved["transferred_columns"] == ["a", "c"]
    assert beside_held(None, base) == {**base} and beside_held(own, None) == own


def test_pass_runs_of_a_seed_in_the_gemm_table_are_not_held_out(tmp_path, monkeypatch):
    """A drawn seed whose GEMM phases the table reads: its pass files leave the held-out set
    (session 70), other seeds' stay, and the table's own record files are never held out."""
    import calibration.heldout_errors as he

    table = tmp_path / "h200-1.json"
    table.write_text(json.dumps({"records": ["calibration/runs/h200_drawn/gemm_phases_drawn21.jsonl",
                                             "calibration/runs/h200_space/gemm_phases.jsonl.gz"]}))
    monkeypatch.setattr(he, "H200_GEMM_TABLE", table)
    files = {"calibration/runs/h200_drawn/drawn21.jsonl.gz", "calibration/runs/h100/drawn21.jsonl",
             "calibration/runs/h200_drawn/drawn21_rerun.jsonl", "calibration/runs/h200_drawn/drawn2.jsonl.gz",
             "calibration/runs/h200_drawn/drawn212.jsonl.gz", "calibration/runs/h200_space/gemm_phases.jsonl.gz",
             "calibration/runs/h200_drawn/gemm_phases_drawn22.jsonl"}
    assert he.table_read(files) == {"calibration/runs/h200_drawn/drawn21.jsonl.gz",
                                    "calibration/runs/h100/drawn21.jsonl",
                                    "calibration/runs/h200_drawn/drawn21_rerun.jsonl",
                                    "calibration/runs/h200_space/gemm_phases.jsonl.gz"}

