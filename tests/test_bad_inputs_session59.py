"""Session 59 (a helper's fuzzing pass over the recently changed tools: calibration.transfer
--write-hopper, mok calibrate, calibration.registered / register / heldout_errors / draw_shapes,
mok predict / tune / bench / simulate / validate and the space sweep's --plan-out). Each test is
one fault found. CPU only, each a few seconds; nothing is written into the repository (the
minutes-long transfer fit is replaced by a stand-in that fails the test if it is reached)."""

from __future__ import annotations

import os
import types
from pathlib import Path

import pytest

from cli_errors import one_error

ROOT = Path(__file__).resolve().parent.parent


# ------------------------------------------------------------------------- transfer --write-hopper

TR = "python -m calibration.transfer"


def _params_dir(tmp_path, monkeypatch):
    """A stand-in for mok_model/params (h100-1's outputs in it) and a transfer whose fit fails
    the test if it starts: the outputs must be checked before it."""
    from calibration import transfer

    (tmp_path / "gemm").mkdir()
    for name in ("h100-1.json", "h100-hgx8.json", "gemm/h100-1.json"):
        (tmp_path / name).write_text("{}")

    def no_work():
        raise AssertionError("the minutes-long fit began before the outputs were checked")

    monkeypatch.setattr(transfer, "PARAMS_DIR", tmp_path)
    monkeypatch.setattr(transfer, "hopper_params", no_work)
    return transfer


def test_write_hopper_checks_its_outputs_before_the_fit(tmp_path, monkeypatch, capsys):
    """A read-only mok_model/params/h100-1.json was found only after hopper_params' ~2 minutes
    of fitting: outputs are checked before the work."""
    transfer = _params_dir(tmp_path, monkeypatch)
    os.chmod(tmp_path / "h100-1.json", 0o444)
    assert transfer.main(["--write-hopper"]) == 2
    assert "is not writable" in one_error(capsys.readouterr().err, TR)


def test_write_hopper_checks_the_fit_record_beside_its_output(tmp_path, monkeypatch, capsys):
    """The pass fit (mok calibrate --out h100-1.json) writes fit/h100-1.json beside it: a file
    named `fit` there failed that calibrate after h100-1.json and its GEMM table had been
    replaced by the transfer alone (no pass fit), leaving a half-written set."""
    transfer = _params_dir(tmp_path, monkeypatch)
    (tmp_path / "fit").write_text("")
    assert transfer.main(["--write-hopper"]) == 2
    assert "is a file" in one_error(capsys.readouterr().err, TR)


def test_write_hopper_reads_the_pass_runs_from_the_repository(tmp_path, monkeypatch):
    """fit_hopper_passes handed calibrate repository-relative paths (the pass runs, --base and
    --out): run from any other folder (`cd /tmp; python -m calibration.transfer
    --write-hopper`), calibrate found no run file after h100-1.json and its table were already
    rewritten. The paths now resolve in the repository whatever the caller's folder."""
    from calibration import cli, transfer

    seen = {}

    class Stop(Exception):
        pass

    def fake_calibrate(argv):
        seen["cwd"], seen["argv"] = os.getcwd(), argv
        raise Stop

    monkeypatch.setattr(cli, "calibrate_cli", fake_calibrate)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(Stop):
        transfer.fit_hopper_passes(ROOT / "mok_model" / "params" / "h100-1.json",
                                   types.SimpleNamespace(uncertainty=None))
    runs = [a for a in seen["argv"] if a.endswith(".jsonl")]
    assert runs and all((Path(seen["cwd"]) / f).is_file() for f in runs)
    base = seen["argv"][seen["argv"].index("--base") + 1]
    assert (Path(seen["cwd"]) / base).is_file()
    assert os.getcwd() == str(tmp_path)


# ------------------------------------------------------------------------------ registered

REG = "python -m calibration.registered"
PRED = ROOT / "calibration" / "predictions" / "h100_drawn26_2026-12-06.jsonl"
RUN = str(ROOT / "calibration" / "runs" / "h100" / "drawn26.jsonl.gz")


def test_registered_refuses_a_run_predicted_twice(tmp_path, capsys):
    """A registration with one line twice (a concatenation, a hand edit) counted that run twice:
    n, MAPE, max and Spearman were figures of runs that were not made, exit 0."""
    from calibration.registered import main
    lines = PRED.read_text(encoding="utf-8").splitlines()[:6]
    (tmp_path / "twice.jsonl").write_text("\n".join([*lines, lines[0]]) + "\n")
    (tmp_path / "once.jsonl").write_text("\n".join(lines) + "\n")
    assert main([str(tmp_path / "once.jsonl"), RUN]) == 0
    capsys.readouterr()
    assert main([str(tmp_path / "twice.jsonl"), RUN]) == 2
    err = one_error(capsys.readouterr().err, REG)
    assert "twice.jsonl:7: predicts the same analytic run as" in err and "twice.jsonl:1" in err


# -------------------------------------------------------------------------- heldout_errors

HE = "python -m calibration.heldout_errors"


def test_heldout_errors_reads_its_default_runs_from_any_folder(tmp_path, monkeypatch, capsys):
    """Without RUNS it read HELDOUT_RUNS (repository-relative names) from the caller's folder:
    from any other folder it said a shipped run file did not exist, exit 2. The files are read
    from the repository and the output still names them as listed (the minutes of prediction
    are replaced by a stand-in here)."""
    import json

    from calibration import heldout_errors as he

    monkeypatch.setattr(he, "measure", lambda *a, **k: {"groups": {}, "fingerprint": "f",
                                                        "params": "p"})
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "h.json"
    assert he.main(["--hardware", "h100-1", "--out", str(out)]) == 0, capsys.readouterr().err
    assert json.loads(out.read_text())["files"] == he.HELDOUT_RUNS["h100-1"]


# -------------------------------------------------------------------------------- validate

def test_validate_refuses_records_the_model_does_not_predict():
    """calibration.validate.validate on a run file's records as read (MoK and gemm-only) gave
    MAPE nan, max nan and a Spearman, no error: a gemm-only record's prediction is nan. It now
    refuses such a record by id and system; the MoK records alone still validate."""
    from calibration.validate import validate
    from mok_model.errors import MokInputError
    from mok_model.params import read_params
    from mok_model.records import read_records

    records = read_records([str(ROOT / "calibration/runs/h100/drawn24.jsonl.gz")])
    params = read_params(ROOT / "mok_model/params/h100-1.json")
    with pytest.raises(MokInputError, match="system 'gemm-only' is not one the model predicts"):
        validate(records, params)
    v = validate([r for r in records if r["system"] == "mok"], params)
    assert v.n == 120 and 0 < v.mape < 0.2
