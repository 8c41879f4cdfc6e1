"""Session 51 (second helper): fuzzing of the calibration tools' arguments and input files.
Each test is one fault found: a flag silently ignored, an output written over the parameters
file the command reads, an empty or 0-of-0 report printed as an answer with exit 0, a repeated
NAME=FILE with the last one silently winning, a parameters file of other hardware used without
the mismatch check, and a progress line before the one-line error. CPU only, each a few
seconds; nothing is written into the repository (the one write is intercepted)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli_errors import one_error
from mok_model.fileio import file_text

ROOT = Path(__file__).resolve().parent.parent
SWEEP = ROOT / "calibration" / "runs" / "h200" / "mok_sweep.jsonl.gz"
PUBLISHED = ROOT / "calibration" / "runs" / "published" / "gb300_table1.jsonl"
PARAMS = ROOT / "mok_model" / "params"


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> str:
    """20 measured MoK records of one workload (kimi-k2, EP 16, 1,024 tokens, h200-1): forward,
    BF16, no backward or FP8 record among them."""
    out = []
    for line in file_text(SWEEP).splitlines():
        if line.strip() and json.loads(line)["system"] == "mok":
            out.append(line)
        if len(out) == 20:
            break
    path = tmp_path_factory.mktemp("runs") / "r20.jsonl"
    path.write_text("\n".join(out) + "\n")
    return str(path)


# ------------------------------------------------------------------------------ knob_pairs


def test_knob_pairs_by_with_run_files_is_not_ignored(runs, capsys):
    """`--by` holds out by tokens or model in the 2-GPU report only; given run files, the
    records are predicted with the shipped parameters and `--by model` printed the very same
    report as without it, exit 0 (a silently ignored value)."""
    from calibration import knob_pairs
    rc = knob_pairs.main(["--by", "model", runs])
    captured = capsys.readouterr()
    assert rc == 2, captured.out[-500:]
    assert "--by" in one_error(captured.err, "python -m calibration.knob_pairs")


# -------------------------------------------------------------------------- heldout_errors


def test_heldout_errors_out_is_not_the_parameters_file_it_reads(runs, capsys, monkeypatch):
    """`--out mok_model/params/h200-1.json` replaced the shipped h200-1 parameters (the file the
    tool predicts with) by a held-out-errors document, exit 0, without a word: every later
    `mok predict --hardware h200-1` then failed ("schema must be 'mok-params/1'"). The write
    is intercepted here, so a regression cannot damage the repository."""
    from calibration import heldout_errors
    written = []
    monkeypatch.setattr(heldout_errors, "atomic_write_text",
                        lambda path, text: written.append(str(path)))
    rc = heldout_errors.main(["--out", str(PARAMS / "h200-1.json"), runs])
    captured = capsys.readouterr()
    assert written == [] and rc == 2, (written, captured.err[-500:])
    assert "h200-1.json" in one_error(captured.err, "python -m calibration.heldout_errors")


def test_heldout_errors_coverage_of_one_file_is_refused(runs, capsys):
    """`--coverage` leaves each file out in turn; with one file (or files of no common group)
    no run can be scored, and it printed `all: 0 of 0 (0.0%)`, exit 0: a share of nothing
    printed as an answer."""
    from calibration import heldout_errors
    rc = heldout_errors.main(["--coverage", runs])
    captured = capsys.readouterr()
    assert "0 of 0" not in captured.out, captured.out
    assert rc == 2
    one_error(captured.err, "python -m calibration.heldout_errors")


def test_heldout_errors_refusal_is_one_line(runs, tmp_path, capsys):
    """Records of another hardware than --hardware: the progress line `FILE: 0 MoK records`
    came before the error line on stderr (two lines for one refusal)."""
    from calibration import heldout_errors
    rc = heldout_errors.main(["--out", str(tmp_path / "h.json"), "--hardware", "h100-1", runs])
    captured = capsys.readouterr()
    assert rc == 2
    one_error(captured.err, "python -m calibration.heldout_errors")
    assert not (tmp_path / "h.json").exists()


# ---------------------------------------------------------------------------- gb300_knobs


def test_gb300_knobs_prior_named_twice_is_refused(capsys, monkeypatch):
    """`--prior sm_scaling=A --prior sm_scaling=B`: the second file silently replaced the first
    (a parameter list naming a value twice is refused everywhere else:
    calibration.checks.param_names). The report itself is stubbed: the refusal comes first."""
    from calibration import gb300_knobs
    monkeypatch.setattr(gb300_knobs, "report", lambda *a, **k: {})
    rc = gb300_knobs.main(["--no-sim", "--json",
                           "--prior", f"sm_scaling={PARAMS / 'h200-hgx8.json'}",
                           "--prior", f"sm_scaling={PARAMS / 'h200-1.json'}", str(PUBLISHED)])
    captured = capsys.readouterr()
    assert rc == 2, captured.out[-300:]
    assert "sm_scaling" in one_error(captured.err, "python -m calibration.gb300_knobs")


def test_gb300_knobs_params_of_other_hardware_is_refused(capsys):
    """`--params mok_model/params/h200-1.json` (an H200 fit) scored the GB300 NVL72 rows with
    it as the in-sample column, exit 0; every other reader refuses a parameters file fitted for
    other hardware than the records' (or asks for --allow-params-mismatch)."""
    from calibration import gb300_knobs
    rc = gb300_knobs.main(["--no-sim", "--json", "--params", str(PARAMS / "h200-1.json"),
                           str(PUBLISHED)])
    captured = capsys.readouterr()
    assert rc == 2, captured.out[-300:]
    line = one_error(captured.err, "python -m calibration.gb300_knobs")
    assert "h200-1" in line and "gb300-nvl72" in line


# --------------------------------------------------------------------------- report_passes


def test_report_passes_without_any_pass_records_is_refused(runs, capsys):
    """Files holding no backward or FP8 MoK record (here forward BF16 only) printed
    `records per group: {'bwd': 0, ...}` and an empty table, exit 0; the other reports refuse
    files with nothing to report (one line, exit 2)."""
    from calibration import report_passes
    rc = report_passes.main([runs])
    captured = capsys.readouterr()
    assert rc == 2, captured.out[-500:]
    one_error(captured.err, "python -m calibration.report_passes")


# --------------------------------------------------- a fit under another preset's default name

def test_calibrate_refuses_another_presets_default_parameters_file(runs, capsys):
    """`mok calibrate --out mok_model/params/h100-1.json` on h200-1 records wrote an h200-1 fit
    under h100-1's name, and `mok predict --hardware h100-1` then used it with no check (the
    shipped default got none). Both are refused now; nothing is written."""
    from mok_model.cli import main as mok_main

    target = PARAMS / "h100-1.json"
    before = target.read_bytes()
    assert mok_main(["calibrate", "--out", str(target), runs]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "default parameters file of h100-1" in err, err
    assert target.read_bytes() == before


def test_a_default_parameters_file_of_other_hardware_is_refused(monkeypatch, tmp_path):
    from mok_model import params as params_mod
    from mok_model.errors import MokInputError

    folder = tmp_path / "params"
    folder.mkdir()
    (folder / "h100-1.json").write_text((params_mod.PARAMS_DIR / "h200-1.json").read_text())
    (folder / "gemm").symlink_to(params_mod.PARAMS_DIR / "gemm")   # the table it names
    monkeypatch.setattr(params_mod, "PARAMS_DIR", folder)
    with pytest.raises(MokInputError, match="fitted for hardware 'h200-1'"):
        params_mod.load_params(None, "h100-1")
