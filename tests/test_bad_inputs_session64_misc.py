"""Session 64 (a helper's fuzzing pass: the route cache's default folder, calibration.registered,
mok study's flags and --out, mok validate / calibrate on records without knobs). Each test is one
fault found. CPU only, a few seconds each; nothing is written into the repository."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from cli_errors import one_error
from mok_model.fileio import file_text

ROOT = Path(__file__).resolve().parent.parent
PRED = ROOT / "calibration" / "predictions" / "h100_drawn32_2026-12-06.jsonl"
RUNS = ROOT / "calibration" / "runs" / "h100" / "drawn32.jsonl.gz"
PUBLISHED = ROOT / "calibration" / "runs" / "published" / "gb300_table1.jsonl"
H200_RUNS = ROOT / "calibration" / "runs" / "h200" / "mok_sweep.jsonl.gz"
PREDICT = ["predict", "--hardware", "h200-1", "--model", "kimi-k2", "--ep", "16", "--tokens", "4096"]


# ------------------------------------------------------------- the route cache's default folder


@pytest.fixture
def default_cache(tmp_path, monkeypatch):
    """The route cache at its default folder (conftest names one with MOK_ROUTE_CACHE_DIR), a
    home of its own, run in an empty working folder."""
    monkeypatch.delenv("MOK_ROUTE_CACHE_DIR", raising=False)
    monkeypatch.delenv("MOK_ROUTE_CACHE", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return tmp_path


def _predict_warns(capsys, *words: str) -> str:
    from mok_model.cli import main

    assert main(PREDICT) == 0
    lines = [x for x in capsys.readouterr().err.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("mok: warning: "), lines
    assert all(w in lines[0] for w in words), lines[0]
    return lines[0]


def test_a_relative_xdg_cache_home_is_ignored_with_a_warning(default_cache, monkeypatch, capsys):
    """XDG_CACHE_HOME='~/x' made a folder literally named '~' in the working folder and cached
    there, exit 0; the XDG Base Directory spec calls a relative path invalid: it is ignored (the
    cache goes to ~/.cache), and a warning says so."""
    monkeypatch.setenv("XDG_CACHE_HOME", "~/x")
    _predict_warns(capsys, "XDG_CACHE_HOME='~/x' is not an absolute path: ignored",
                   str(default_cache / "home" / ".cache" / "mok" / "routes"))
    assert os.listdir(default_cache / "work") == []
    assert any((default_cache / "home" / ".cache" / "mok" / "routes").iterdir())


@pytest.mark.parametrize("kind, words", [("file", "is a file, not a folder"),
                                         ("read-only", "is not writable")])
def test_an_xdg_cache_home_that_cannot_be_written_is_said(default_cache, monkeypatch, capsys,
                                                          kind, words):
    """XDG_CACHE_HOME naming a file or a chmod a-w folder ran with exit 0 and the cache was
    never written, without a word (MOK_ROUTE_CACHE_DIR so is refused); a variable every program
    shares gets a warning, and no cache."""
    where = default_cache / kind
    if kind == "file":
        where.write_text("")
    else:
        where.mkdir()
        where.chmod(0o555)
    monkeypatch.setenv("XDG_CACHE_HOME", str(where))
    _predict_warns(capsys, f"XDG_CACHE_HOME={str(where)!r}", words, "no route cache")
    assert where.is_file() or os.listdir(where) == []


def test_no_cache_folders_under_a_home_that_does_not_exist(default_cache, monkeypatch, capsys):
    """HOME=/nonexistent (the nobody user's) made /nonexistent/.cache/mok/routes, exit 0."""
    home = default_cache / "nonexistent"
    monkeypatch.setenv("HOME", str(home))
    _predict_warns(capsys, f"the home folder {str(home)!r} does not exist", "no route cache")
    assert not home.exists()


# ------------------------------------------------------------------------------ registered


def _altered(tmp_path, line: int, change: dict) -> str:
    lines = PRED.read_text().splitlines()
    lines[line - 1] = json.dumps(json.loads(lines[line - 1]) | change)
    path = tmp_path / "reg.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


@pytest.mark.parametrize("change, words", [
    ({"registered": "2099-12-05T00:00:00+00:00"},
     "1 registered after every run of its workload (first: {path}:6, registered "
     "2099-12-05T00:00:00+00:00, after"),
    ({"ep": 3}, "1 with no run of the same hardware, system, model, EP, tokens, routing, pass, "
                "precision and knobs (first: {path}:6)"),
])
def test_registered_counts_the_predictions_that_meet_no_run(tmp_path, capsys, change, words):
    """A prediction line registered after its run (2099), or of a run never made (EP 3), was
    dropped from the figures without a word: n 119 of 120, exit 0."""
    from calibration import registered

    assert registered.main([str(PRED), str(RUNS)]) == 0      # the clean pair: all 240 meet
    out, err = capsys.readouterr()
    assert err == "" and out.count("n 120") == 2, (out, err)
    path = _altered(tmp_path, 6, change)
    assert registered.main([path, str(RUNS)]) == 0
    out, err = capsys.readouterr()
    assert "n 119" in out
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        "mok: warning: reg.jsonl: 1 of the 240 prediction lines meets no run"), err
    assert words.format(path=path) in lines[0], lines[0]


# ------------------------------------------------------------------------------- mok study


@pytest.mark.parametrize("flags, named", [
    (["--seed", "5"], "--seed"), (["--workers", "1"], "--workers"),
    (["--cluster", "localhost:8786"], "--cluster"), (["--quick"], "--quick"),
])
def test_a_study_refuses_a_flag_it_does_not_use(tmp_path, capsys, flags, named):
    """`mok study predicted-vs-measured --seed 5` wrote the CSV of --seed 0 byte for byte
    (likewise --workers and --cluster): it scores the measured records, no grid, no draw."""
    from studies.cli import cli

    out = tmp_path / "o"
    assert cli(["predicted-vs-measured", "--out", str(out), *flags]) == 2
    err = one_error(capsys.readouterr().err, "mok study")
    assert f"{named}: the predicted-vs-measured study does not use it" in err, err
    assert not out.exists()


def test_the_other_studies_take_every_run_flag(tmp_path):
    from studies.cli import RUN_FLAGS, UNUSED_FLAGS, build_parser, options
    from studies.registry import STUDIES

    assert set(UNUSED_FLAGS) <= set(STUDIES) and all(
        set(f) <= set(RUN_FLAGS) for f in UNUSED_FLAGS.values())
    for name in set(STUDIES) - set(UNUSED_FLAGS):
        a = build_parser().parse_args([name, "--out", str(tmp_path), "--seed", "5", "--quick",
                                       "--workers", "1", "--no-progress"])
        assert options(a).seed == 5


def test_study_out_is_made_only_in_a_folder_that_exists(tmp_path, capsys):
    """`mok study push-vs-pull --out nodir/x` made nodir/ and nodir/x/ where every output file
    refuses a folder that does not exist."""
    from studies.cli import build_parser, cli, options

    assert cli(["push-vs-pull", "--out", str(tmp_path / "nodir" / "x"), "--quick"]) == 2
    err = one_error(capsys.readouterr().err, "mok study")
    assert f"folder {str(tmp_path / 'nodir')!r} does not exist" in err, err
    assert not (tmp_path / "nodir").exists()
    opts = options(build_parser().parse_args(["push-vs-pull", "--out", str(tmp_path / "new")]))
    assert opts.out == tmp_path / "new" / "push-vs-pull" and opts.out.is_dir()


# ------------------------------------------------------------------- mok validate / calibrate


@pytest.fixture
def no_minibatch(tmp_path) -> str:
    rec = next(r for r in map(json.loads, file_text(H200_RUNS).splitlines())
               if r["system"] == "mok" and r["source"] == "measured")
    del rec["config"]["minibatch"]
    path = tmp_path / "runs.jsonl"
    path.write_text(json.dumps(rec) + "\n")
    return str(path)


@pytest.mark.parametrize("cmd", ["validate", "calibrate"])
def test_a_measured_run_without_its_knobs_is_refused(no_minibatch, tmp_path, capsys, cmd):
    """A measured MoK record without config.minibatch was scored at the tuner's choice, exit 0,
    without a word (one record of a fuzzed file: 49.65% APE where its own knobs give 2.55%)."""
    from mok_model.cli import main

    flags = (["--params", str(ROOT / "mok_model" / "params" / "h200-1.json")] if cmd == "validate"
             else ["--out", str(tmp_path / "p.json")])
    assert main([cmd, no_minibatch, *flags]) == 2
    err = one_error(capsys.readouterr().err)
    assert f"{no_minibatch}:1: a measured MoK run without config.minibatch" in err, err
    assert not (tmp_path / "p.json").exists()


def test_validate_counts_the_records_at_the_tuners_knobs(capsys):
    """The published rows name no knobs: they are predicted at the tuner's choice, and the text
    and --json say how many."""
    from mok_model.cli import main

    params = str(ROOT / "mok_model" / "params" / "gb300-nvl72.json")
    assert main(["validate", str(PUBLISHED), "--params", params]) == 0
    assert ("note: 5 MoK record(s) name no knobs (published rows): predicted at the tuner's "
            "choice") in capsys.readouterr().out
    assert main(["validate", str(PUBLISHED), "--params", params, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["tuner_knobs"] == 5
