"""Session 58 (a helper's fuzzing pass over the recently changed calibration tools: registered,
heldout_errors, transfer, gemm_table, draw_shapes, register and the space sweep's CPU side). Each
test is one fault found: an output of another kind replaced in silence, a file beside the output
left unchecked until after the work, an environment variable left unchecked, and an empty path
named as the current folder. CPU only, each a few seconds; nothing is written into the
repository."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from cli_errors import one_error
from mok_model.fileio import file_text

ROOT = Path(__file__).resolve().parent.parent
PHASES = str(ROOT / "calibration" / "runs" / "h100" / "gemm_phases_drawn21.jsonl")
TABLE_ARGS = [PHASES, "--hardware", "h100-1", "--system", "mok-gemm"]


# ------------------------------------------------------------------------------ gemm_table

GT = "python -m calibration.gemm_table"


def test_gemm_table_refuses_to_replace_a_file_that_is_not_a_table(tmp_path, capsys):
    """`--out mok_model/params/h100-1.json` (or any parameters file) was replaced by a GEMM table
    without a word, exit 0: an existing --out must be a GEMM table."""
    from calibration.gemm_table import main
    params = tmp_path / "h100-1.json"
    shutil.copy(ROOT / "mok_model" / "params" / "h100-1.json", params)
    before = params.read_bytes()
    assert main([*TABLE_ARGS, "--out", str(params)]) == 2
    assert "exists and holds 'mok-params/1', not 'mok-gemm-table/1' or 'mok-gemm-table/2'" in \
        one_error(capsys.readouterr().err, GT)
    assert params.read_bytes() == before and not (tmp_path / "points").exists()


def test_gemm_table_says_it_replaces_a_table(tmp_path, capsys):
    """An existing table was replaced in silence; the other whole-file writers (calibrate --out,
    tune --table, simulate --trace) say so."""
    from calibration.gemm_table import main
    out = tmp_path / "t.json"
    assert main([*TABLE_ARGS, "--out", str(out)]) == 0
    assert "will be replaced" not in capsys.readouterr().err
    assert main([*TABLE_ARGS, "--out", str(out)]) == 0
    assert "exists; it will be replaced" in capsys.readouterr().err


def test_gemm_table_checks_its_points_file_before_the_fit(tmp_path, capsys):
    """The points file goes to points/NAME beside --out: a file named `points` there ended the
    write, after the fit, in a FileExistsError traceback."""
    from calibration.gemm_table import main
    (tmp_path / "points").write_text("")
    assert main([*TABLE_ARGS, "--out", str(tmp_path / "t.json")]) == 2
    assert "is a file" in one_error(capsys.readouterr().err, GT)
    assert not (tmp_path / "t.json").exists()


def test_gemm_table_names_an_empty_run_path_and_checks_the_environment(tmp_path, capsys,
                                                                      monkeypatch):
    """A run file '' was read as the folder '.' ("no such run-record file (it is a folder)"), and
    MOK_DEBUG=garbage was taken (the tool did not go through run_tool)."""
    from calibration.gemm_table import main
    assert main(["", "--out", str(tmp_path / "t.json")]) == 2
    assert "'': an empty path" in one_error(capsys.readouterr().err, GT)
    monkeypatch.setenv("MOK_DEBUG", "garbage")
    assert main([*TABLE_ARGS, "--out", str(tmp_path / "t.json")]) == 2
    assert "MOK_DEBUG" in one_error(capsys.readouterr().err, GT)


# ------------------------------------------------------------------ transfer, heldout_errors


def test_transfer_write_fabric_names_an_empty_path(capsys):
    """`--write-fabric ''` said "'.' is a folder" (the path went through Path() before its
    check): an empty path is named as empty."""
    from calibration.transfer import main
    assert main(["--write-fabric", ""]) == 2
    assert "--write-fabric '' is empty" in one_error(capsys.readouterr().err,
                                                     "python -m calibration.transfer")


def test_heldout_errors_out_ending_in_a_slash_is_a_folder(tmp_path, capsys):
    """`--out DIR/` said "'DIR' must name a .json file" (the slash was dropped before the check):
    a path ending in a slash is a folder, as every other output says."""
    from calibration.heldout_errors import main
    assert main(["--hardware", "h100-1", "--out", f"{tmp_path}/x/", PHASES]) == 2
    assert "is a folder" in one_error(capsys.readouterr().err, "python -m calibration.heldout_errors")


# ------------------------------------------------------------------------------ registered

H100_RUNS = str(ROOT / "calibration" / "runs" / "h100" / "drawn21.jsonl.gz")
H100_PRED = ROOT / "calibration" / "predictions" / "h100_drawn21_2026-12-05.jsonl"


def test_a_blank_hardware_name_is_refused_in_registrations_and_records(tmp_path, capsys):
    """A registration line naming hardware "" (or a record's hardware.preset " h100-1") was
    taken: the line met no run and the report went on without it, exit 0."""
    from calibration.registered import main
    lines = H100_PRED.read_text().splitlines()
    for bad in ("", " h100-1", "h100-1 "):
        pred = tmp_path / "p.jsonl"
        pred.write_text(json.dumps(json.loads(lines[0]) | {"hardware": bad}) + "\n"
                        + "\n".join(lines[1:5]) + "\n")
        assert main([str(pred), H100_RUNS]) == 2
        assert "hardware.preset" in one_error(capsys.readouterr().err,
                                               "python -m calibration.registered")
    rec = json.loads(file_text(H100_RUNS).splitlines()[0])
    rec["hardware"]["preset"] = " h100-1"
    runs = tmp_path / "r.jsonl"
    runs.write_text(json.dumps(rec) + "\n")
    assert main([str(H100_PRED), str(runs)]) == 2
    assert "hardware.preset=' h100-1'" in one_error(capsys.readouterr().err,
                                                     "python -m calibration.registered")


# ------------------------------------------------------------------------------- register


def test_register_refuses_hardware_the_runs_never_name(tmp_path, capsys):
    """`--gpus 0 --hardware gb300-nvl72` registered predictions of a real NVL72 pass for runs of
    one GPU emulating its peers, whose records name h200-1 or h100-1: no run could ever meet
    them (and `--gpus 2 --hardware h200-1` the other way round)."""
    from calibration.register import main
    grid = ["--model", "kimi-k2", "--tokens", "4096"]
    for args in (["--gpus", "0", "--ep", "8", "--hardware", "gb300-nvl72"],
                 ["--gpus", "2", "--hardware", "h200-1"]):
        assert main([*args, *grid, "--out", str(tmp_path / "r.jsonl")]) == 2
        assert "--gpus" in one_error(capsys.readouterr().err, "python -m calibration.register")
        assert not (tmp_path / "r.jsonl").exists()
    assert main(["--gpus", "0", "--ep", "8", "--hardware", "h100-1", *grid,
                 "--out", str(tmp_path / "r.jsonl")]) == 0
