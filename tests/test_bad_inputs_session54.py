"""Session 54 (a helper's fuzzing pass over the recently changed calibration tools and sweeps).
Each test is one fault found: a registration scored against runs of other hardware, an all-zero
report printed with exit 0, an output replaced without a word (or over a chmod a-w file), an
environment variable left unchecked, a candidate suffix or a seed taken where it should be
refused, and a flag ignored with --plan-out. CPU only, each a few seconds; nothing is written
into the repository."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from cli_errors import one_error
from mok_model.fileio import file_text

ROOT = Path(__file__).resolve().parent.parent
H100_RUNS = ROOT / "calibration" / "runs" / "h100" / "drawn22.jsonl.gz"
H100_PRED = ROOT / "calibration" / "predictions" / "h100_drawn22_2026-12-05.jsonl"
H200_PRED = ROOT / "calibration" / "predictions" / "h200_drawn8_2026-12-02.jsonl"


# ------------------------------------------------------------------------------ registered


def test_registered_meets_only_runs_of_the_hardware_it_predicts(tmp_path, capsys):
    """A registration of h200-1 predictions met the h100-1 runs of the same workloads (the run key
    held no hardware) and printed MAPE, Spearman and regret of H200 predictions against H100
    measurements, exit 0: now a prediction meets only a run of the hardware it names."""
    from calibration import registered
    lines = [json.loads(x) for x in H100_PRED.read_text().splitlines() if x.strip()]
    pred = tmp_path / "h200.jsonl"
    pred.write_text("".join(json.dumps(p | {"hardware": "h200-1"}) + "\n" for p in lines))
    assert registered.main([str(pred), str(H100_RUNS)]) == 2
    err = one_error(capsys.readouterr().err, "python -m calibration.registered")
    assert "same hardware" in err
    assert registered.main([str(H100_PRED), str(H100_RUNS)]) == 0     # its own hardware: as before
    assert "n 120" in capsys.readouterr().out


# ----------------------------------------------------------------------------- first_timed


def test_first_timed_refuses_predictions_that_meet_no_run(capsys):
    """`--predictions` of other runs (an H200 registration for H100 records) printed the
    default-minus-rest section with n 0 in every row, exit 0."""
    from calibration import first_timed
    assert first_timed.main([str(H100_RUNS), "--predictions", str(H200_PRED)]) == 2
    assert "--predictions" in one_error(capsys.readouterr().err, "python -m calibration.first_timed")
    assert first_timed.main([str(H100_RUNS), "--predictions", str(H100_PRED)]) == 0
    assert "default timed first" in capsys.readouterr().out


def test_first_timed_refuses_files_without_mok_records(tmp_path, capsys):
    """Run files holding no MoK record (gemm-only alone) printed six rows of n 0, exit 0."""
    from calibration import first_timed
    other = [x for x in file_text(H100_RUNS).splitlines() if x.strip()
             and json.loads(x)["system"] != "mok"][:3]
    runs = tmp_path / "gemm_only.jsonl"
    runs.write_text("\n".join(other) + "\n")
    assert first_timed.main([str(runs)]) == 2
    assert "no measured MoK" in one_error(capsys.readouterr().err,
                                           "python -m calibration.first_timed")


# -------------------------------------------------------------------------- heldout_errors


@pytest.fixture
def r20(tmp_path) -> str:
    path = tmp_path / "r20.jsonl"
    path.write_text("\n".join(file_text(H100_RUNS).splitlines()[:20]) + "\n")
    return str(path)


def test_heldout_errors_says_it_replaces_an_existing_out(r20, tmp_path, capsys):
    """`--out FILE` naming an existing file replaced it without a word (mok calibrate --out,
    tune --table and simulate --trace warn); the default file is still rewritten quietly."""
    from calibration import heldout_errors
    out = tmp_path / "mine.json"
    out.write_text("{}\n")
    assert heldout_errors.main(["--hardware", "h100-1", r20, "--out", str(out)]) == 0
    assert "it will be replaced" in capsys.readouterr().err
    assert json.loads(out.read_text())["hardware"] == "h100-1"


def test_heldout_errors_checks_the_environment(monkeypatch, capsys):
    """MOK_DEBUG=yes was ignored by heldout_errors alone (every run_tool tool refuses it)."""
    from calibration import heldout_errors
    monkeypatch.setenv("MOK_DEBUG", "yes")
    assert heldout_errors.main(["--hardware", "h100-1", "--coverage"]) == 2
    assert "MOK_DEBUG" in one_error(capsys.readouterr().err, "python -m calibration.heldout_errors")


# -------------------------------------------------------------------------------- transfer


def test_transfer_write_hopper_refuses_a_read_only_target(monkeypatch, capsys):
    """`--write-hopper` replaced a chmod a-w h100-1.json (the table first, then the parameters:
    rename over a read-only file works); both outputs are now checked before either is written."""
    from calibration import transfer
    from mok_model import fileio

    written = []
    monkeypatch.setattr("mok_model.gemm_table.write_table", lambda *a, **k: written.append(a))
    monkeypatch.setattr("mok_model.params.write_params", lambda *a, **k: written.append(a))
    real = fileio.writable
    target = transfer.PARAMS_DIR / f"{transfer.HOPPER_TARGET}.json"
    monkeypatch.setattr(fileio, "writable",
                        lambda p, mode: False if Path(p) == target else real(p, mode))
    assert transfer.main(["--write-hopper"]) == 2
    assert "not writable" in one_error(capsys.readouterr().err, "python -m calibration.transfer")
    assert not written


# ------------------------------------------------------------------------------ tile_sweep


@pytest.mark.parametrize("candidates", ["m128-g128-d256-w8-s4-c16-c32",
                                        "m128-g128-d256-w8-s4-c16,m128-g128-d256-w8-s4-c016",
                                        "m128-g128-d256-w8-s4-k4-c64,m128-g128-d256-w8-s4-c64-k4"])
def test_tile_sweep_refuses_a_candidate_option_twice(candidates, tmp_path, capsys, monkeypatch):
    """`-c16-c32` ran copy_rows 16 alone (the last suffix read won in silence), and the same
    candidate spelt twice (-c16 and -c016, suffixes in another order) was timed twice."""
    from mok_kernels import tile_sweep
    monkeypatch.setattr("mok_kernels.require_cuda", lambda: None)
    monkeypatch.setattr("mok_kernels.tile_sweep.time.time", lambda: pytest.fail("swept"))
    rc = tile_sweep.main(["--out", str(tmp_path / "t.jsonl"), "--candidates", candidates])
    assert rc == 2
    one_error(capsys.readouterr().err, "python -m mok_kernels.tile_sweep")


# ------------------------------------------------------------------------------------ seeds


@pytest.mark.parametrize("tool,args", [("list_check", ["--draws", "1"]),
                                       ("draw_shapes", ["--count", "1", "--out-dir", "OUT"])])
def test_a_seed_is_at_most_2_to_63_minus_1(tool, args, tmp_path, capsys):
    """list_check and draw_shapes took any seed (a 300-digit one ended draw_shapes in "a file name
    too long"); every other tool takes [0, 2^63 - 1]."""
    import importlib
    mod = importlib.import_module(f"calibration.{tool}")
    argv = [str(tmp_path / "d") if x == "OUT" else x for x in args]
    assert mod.main(argv + ["--seed", str(2 ** 63)]) == 2
    assert "9223372036854775807" in one_error(capsys.readouterr().err, f"python -m calibration.{tool}")
    assert not (tmp_path / "d").exists()


# ----------------------------------------------------------------------------- space_sweep


def test_space_sweep_plan_out_refuses_alternate_default(tmp_path, capsys):
    """`--plan-out P --alternate-default` wrote the plan with the flag ignored (the plan does not
    hold the timing order), as --iters or --deadline-s would have been."""
    from mok_kernels import space_sweep
    out = tmp_path / "plan.jsonl"
    assert space_sweep.main(["--plan-out", str(out), "--alternate-default"]) == 2
    assert "--alternate-default" in one_error(capsys.readouterr().err,
                                               "python -m mok_kernels.space_sweep")
    assert not out.exists() and os.listdir(tmp_path) == []


def test_registered_warns_of_runs_of_other_hardware(tmp_path, capsys):
    """Runs of a card the registration does not name meet no prediction (since session 54's
    hardware match): the report says how many it left out, once, after its figures."""
    from calibration import registered
    other = [json.loads(x) for x in file_text(H100_RUNS).splitlines() if x.strip()][:3]
    for r in other:
        r["hardware"] = {**r["hardware"], "preset": "h200-1"}
        r["id"] += "-other"         # ids are unique across the files read
    runs = tmp_path / "mixed.jsonl"
    runs.write_text(file_text(H100_RUNS) + "".join(json.dumps(r) + "\n" for r in other))
    assert registered.main([str(H100_PRED), str(runs)]) == 0
    out, err = capsys.readouterr()
    assert "n 120" in out
    assert err.strip() == ("mok: warning: run records of other hardware meet no prediction "
                           "(3 of h200-1): h100_drawn22_2026-12-05.jsonl registers h100-1")
    assert registered.main([str(H100_PRED), str(H100_RUNS)]) == 0
    assert capsys.readouterr().err == ""
