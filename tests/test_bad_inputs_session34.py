"""Bad input found by session 34's new-user pass over every entry point (after sessions 29 and
30's fuzzing). Each case is one line naming the value and the rule, exit status 2, and nothing
written or changed."""

from __future__ import annotations

import shutil

import pytest

import mok_model.params
from mok_model.cli import main
from mok_model.fileio import file_text

from test_bad_inputs_session30 import REPO, W, _one_line  # the same workload and one-line check


@pytest.mark.parametrize("argv", [
    ["simulate", *W, "--trace", "{p}/gb300-nvl72.json"],
    ["tune", "--hardware", "gb300-nvl72", "--model", "kimi-k2", "--ep", "16", "--table",
     "{p}/gb300-nvl72.json"],
])
def test_output_over_the_default_parameters_is_refused(argv, tmp_path, capsys, monkeypatch):
    """`simulate --trace` (or `tune --table`) naming the hardware's shipped parameters file,
    read without --params, wrote the trace over it: every later prediction on that hardware
    failed. Run on a copy of mok_model/params/ (before the fix this test overwrote it)."""
    params = tmp_path / "params"
    shutil.copytree(mok_model.params.PARAMS_DIR, params)
    monkeypatch.setattr(mok_model.params, "PARAMS_DIR", params)
    before = (params / "gb300-nvl72.json").read_bytes()
    rc = main([a.replace("{p}", str(params)) for a in argv])
    _one_line(rc, capsys.readouterr().err, "mok: error: ",
              "is also the input shipped model data")
    assert (params / "gb300-nvl72.json").read_bytes() == before


@pytest.mark.parametrize("address, want", [
    ("bogus address", "a Dask scheduler address such as tcp://HOST:8786"),
    ("tcp://127.0.0.1:1", "--cluster 'tcp://127.0.0.1:1'"),
])
def test_study_cluster_is_checked_before_the_output_folder(address, want, tmp_path, capsys,
                                                           monkeypatch):
    """`mok study NAME --cluster ADDRESS` checked the address only when the grid started, after
    the output folder was made; with dask not installed a malformed address was reported as a
    missing dask. Now: the address's form, then dask, then a listener, before anything else."""
    monkeypatch.setitem(__import__("sys").modules, "dask.distributed", None)  # as without dask
    out = tmp_path / "new"
    rc = main(["study", "ep-table", "--quick", "--out", str(out), "--cluster", address])
    _one_line(rc, capsys.readouterr().err, "mok study: error: ", want)
    assert not out.exists(), "the output folder was made although the input was refused"


def test_experts_times_ep_beyond_memory_is_refused(tmp_path, capsys, monkeypatch):
    """A model of 2^20 routed experts (the allowed maximum) at EP 1024 on rubin-ultra-nvl576,
    1 token: the routing's counts per (GPU, expert) pair (16 GB for one array) were not in the
    memory check, and the process was killed for memory (24 GB) or printed `internal error:
    MemoryError`. Here the same rule on a machine of 200 MB: 2^16 experts at EP 64 need ~170 MB."""
    import mok_model.workload as workload

    monkeypatch.setattr(workload, "physical_memory_bytes", lambda: 200_000_000)
    model = tmp_path / "wide.toml"
    model.write_text("hidden = 1024\nexpert_width = 512\nrouted_experts = 65536\ntop_k = 8\n")
    rc = main(["predict", "--hardware", "rubin-ultra-nvl576", "--model", str(model), "--ep", "64",
               "--tokens", "1"])
    _one_line(rc, capsys.readouterr().err, "mok: error: ",
              "--ep 64 with 65536 routed experts: counting rows per (GPU, expert) pair")


PUBLISHED = "calibration/runs/published/gb300_table1.jsonl"
PARAMS = "mok_model/params/gb300-nvl72.json"


def _published_record() -> dict:
    import json

    return json.loads((REPO / PUBLISHED).read_text().splitlines()[0])


@pytest.mark.parametrize("line, want", [
    ("[" * 100_000 + "]" * 100_000, "not JSON (nested too deeply to read)"),
    ('{"tokens": ' + "9" * 5000 + "}", "is larger than any number a record holds"),
    ("RECORD_BIG_TOKENS", "is larger than any number a record holds"),
])
@pytest.mark.parametrize("cmd", ["validate", "calibrate"])
def test_run_record_json_that_python_cannot_hold(cmd, line, want, tmp_path, capsys, monkeypatch):
    """A run-record line nested 100,000 deep (RecursionError), an integer of 5,000 digits
    (Python's int-string limit) or a field of 10^400 (OverflowError in the model) was `internal
    error`, exit 1; now one line naming file and line, exit 2."""
    import json

    monkeypatch.chdir(REPO)
    if line == "RECORD_BIG_TOKENS":
        line = json.dumps({**_published_record(), "tokens": 10 ** 400})
    runs = tmp_path / "runs.jsonl"
    runs.write_text(line + "\n")
    tail = ["--params", PARAMS] if cmd == "validate" else ["--out", str(tmp_path / "p.json")]
    rc = main([cmd, str(runs), *tail])
    err = capsys.readouterr().err
    _one_line(rc, err, "mok: error: ", f"{runs}:1: ")
    assert want in err, err
    assert not (tmp_path / "p.json").exists()


@pytest.mark.parametrize("text, want", [
    ("[" * 100_000 + "]" * 100_000, "not JSON (nested too deeply to read"),
    ('{"schema": ' + "9" * 5000 + "}", "not JSON (an integer too long to read"),
])
def test_parameters_file_json_that_python_cannot_hold(text, want, tmp_path, capsys):
    """The same JSON in a --params file: `internal error: RecursionError` / `ValueError`."""
    params = tmp_path / "p.json"
    params.write_text(text)
    rc = main(["predict", *W, "--params", str(params)])
    _one_line(rc, capsys.readouterr().err, "mok: error: ", want)


@pytest.mark.parametrize("ref, body, want", [
    (5, None, "fit_record=5 must name a file beside it"),
    ("fit/bad.json", "{nope", "is not JSON"),
    ("fit/list.json", "[1]", "schema must be 'mok-params-fit/1'"),
])
def test_validate_heldout_only_reads_a_bad_fit_record(ref, body, want, tmp_path, capsys,
                                                      monkeypatch):
    """`mok validate --heldout-only` with a parameters file whose fit_record is not a name
    (TypeError), or names a file that is not JSON or not an object: `internal error`, exit 1."""
    import json

    monkeypatch.chdir(REPO)
    (tmp_path / "fit").mkdir()
    if body is not None:
        (tmp_path / ref).write_text(body)
    params = tmp_path / "p.json"
    params.write_text(json.dumps({**json.loads((REPO / PARAMS).read_text()), "fit_record": ref}))
    rc = main(["validate", PUBLISHED, "--params", str(params), "--heldout-only"])
    _one_line(rc, capsys.readouterr().err, "mok: error: ", want)


@pytest.mark.parametrize("text, want", [
    ("hidden = " + "[" * 50_000 + "]" * 50_000 + "\n", "not valid TOML (nested too deeply to read)"),
    ("hidden = " + "9" * 5000 + "\nexpert_width = 2\nrouted_experts = 4\ntop_k = 1\n",
     "not valid TOML (an integer too long to read"),
    ("hidden = " + "9" * 400 + "\nexpert_width = 2\nrouted_experts = 4\ntop_k = 1\n",
     "hidden=999999999999... (400 digits) is larger than any number it may be"),
])
def test_model_toml_that_python_cannot_hold(text, want, tmp_path, capsys):
    """A model TOML file nested 50,000 deep, an integer of 5,000 digits or one of 400 digits
    (OverflowError in the finite check): `internal error`, exit 1."""
    model = tmp_path / "m.toml"
    model.write_text(text)
    rc = main(["predict", "--hardware", "gb300-nvl72", "--model", str(model), "--ep", "4",
               "--tokens", "64"])
    _one_line(rc, capsys.readouterr().err, "mok: error: ", want)


def test_regret_leaves_out_sweeps_the_model_cannot_draw(tmp_path, capsys, monkeypatch):
    """`python -m calibration.regret` (no arguments, and docs/calibration.md's command) died in a
    traceback (nanargmin: All-NaN slice): a sweep of hot records drawn before the model's draw
    (records.hot_reproduced) was scored, every prediction nan. Such records are no sweep."""
    import json

    from calibration.regret import main as regret

    monkeypatch.chdir(REPO)
    from mok_model.records import hot_reproduced

    lines = file_text(REPO / "calibration/runs/h200/mok_sweep_imbalanced.jsonl.gz").splitlines()
    legacy = [ln for ln in lines if ln.strip() and json.loads(ln)["system"] == "mok"
              and json.loads(ln)["routing"].get("kind") == "hot"
              and not hot_reproduced(json.loads(ln))]
    assert len(legacy) >= 8
    runs = tmp_path / "legacy_hot.jsonl"
    runs.write_text("\n".join(legacy) + "\n")
    rc = regret([str(runs)])
    cap = capsys.readouterr()
    assert rc == 0, cap.err
    assert "no workload" in cap.out and "has a measured sweep" in cap.out, cap.out


def _gb300_body() -> str:
    hw = (REPO / "mok_model/presets/hardware.toml").read_text()
    block = hw[hw.index("[gb300-nvl72]"):hw.index("[gb300-nvl72.sources]")]
    return block.split("\n", 1)[1]


@pytest.mark.parametrize("argv, want", [
    (["predict", "--tokens", "1024"], "is a simulator what-if, and the analytic engine models every"),
    (["predict", "--tokens", "1024", "--system", "nccl-torch"], "is a simulator what-if"),
    (["tune", "--tokens", "1024"], "is a simulator what-if"),
    (["tune", "--table", "{d}/t.json"], "is a simulator what-if"),
    (["simulate", "--tokens", "1024", "--degrade", "gpu1:0.5"],
     "--degrade gpu1:0.5 and the degrade 'gpu3:0.5' of --hardware"),
])
def test_hardware_file_degrade_is_not_ignored(argv, want, tmp_path, capsys):
    """A hardware TOML file's `degrade` (a documented field: degraded or failed links) was read
    by the simulator only: `mok predict` / `mok tune` printed the healthy fabric's latency, even
    for `gpu3:0` (a pass that could never finish), and `simulate --degrade` replaced it."""
    hw = tmp_path / "degraded.toml"
    hw.write_text(_gb300_body() + '\ndegrade = "gpu3:0.5"\n')
    rc = main([*[a.replace("{d}", str(tmp_path)) for a in argv], "--hardware", str(hw), "--model",
               "kimi-k2", "--ep", "8", "--params", PARAMS, "--allow-params-mismatch"])
    _one_line(rc, capsys.readouterr().err, "mok: error: ", want)
    assert not (tmp_path / "t.json").exists()


@pytest.mark.parametrize("argv, want", [
    (["--label", ""], "--label '' names the files written under --out"),
    (["--label", "a/b"], "--label 'a/b' names the files written under --out"),
    (["--out", ""], "--out '' is empty; name a folder"),
    (["--out", "{d}/a-file/sub"], "lies under the file"),
])
def test_aot_checks_label_and_out_before_triton(argv, want, tmp_path, capsys):
    """`python -m mok_kernels.aot`: --out was checked only after the Triton check (a machine
    without Triton never saw a bad --out), and --label '' silently became the default label
    ('a/b' wrote outside --out)."""
    from mok_kernels.aot import main as aot

    (tmp_path / "a-file").write_text("x")
    rc = aot([a.replace("{d}", str(tmp_path)) for a in argv])
    _one_line(rc, capsys.readouterr().err, "python -m mok_kernels.aot: error: ", want)


def test_space_sweep_empty_skip_done_is_refused(tmp_path, capsys):
    """`python -m mok_kernels.space_sweep --skip-done ''` read as "skip nothing" (a silent
    default); now one line naming the flag, before the CUDA check."""
    from mok_kernels.space_sweep import main as space_sweep

    rc = space_sweep(["--out", str(tmp_path / "s.jsonl"), "--skip-done", ""])
    _one_line(rc, capsys.readouterr().err, "python -m mok_kernels.space_sweep: error: ",
              "--skip-done '' is empty")


@pytest.mark.parametrize("where, want", [
    ("file", "its fit record goes to"),
    ("read-only", "--out's fit record"),
])
def test_calibrate_checks_the_fit_record_folder_first(where, want, tmp_path, capsys, monkeypatch):
    """`mok calibrate --out DIR/p.json` writes its fit record to DIR/fit/p.json: where DIR/fit
    was a file the fit ran, then ended in `internal error: FileExistsError` (its result lost);
    a read-only DIR/fit was written over. Both are refused before the fit."""
    import os

    monkeypatch.chdir(REPO)
    fit = tmp_path / "fit"
    if where == "file":
        fit.write_text("x")
    else:
        fit.mkdir()
        os.chmod(fit, 0o555)
    try:
        rc = main(["calibrate", PUBLISHED, "--band", "none", "--out", str(tmp_path / "p.json")])
    finally:
        os.chmod(fit, 0o755)
    _one_line(rc, capsys.readouterr().err, "mok: error: ", want)
    assert not (tmp_path / "p.json").exists()


@pytest.mark.parametrize("blocker", ["ep-table.csv", "summary.md"])
def test_study_output_files_are_checked_before_the_grid(blocker, tmp_path, capsys):
    """`mok study NAME --out DIR` checked DIR/NAME but not the files it writes there: a folder
    (or a read-only file) named NAME.csv or summary.md ended the finished study in `internal
    error: IsADirectoryError`, exit 1."""
    (tmp_path / "ep-table" / blocker).mkdir(parents=True)
    rc = main(["study", "ep-table", "--quick", "--out", str(tmp_path)])
    _one_line(rc, capsys.readouterr().err, "mok study: error: ",
              f"the study's file '{tmp_path / 'ep-table' / blocker}' is a folder")


LONG = "a" * 300      # one path component longer than any file system's 255


@pytest.mark.parametrize("argv", [
    ["simulate", *W, "--trace", "{d}/LONG.json"],
    ["predict", *W, "--params", "{d}/LONG.json"],
    ["predict", "--hardware", "{d}/LONG.toml", "--model", "kimi-k2", "--ep", "16", "--tokens", "64"],
    ["predict", *W, "--routing", "{d}/LONG.npy"],
    ["validate", "{d}/LONG.jsonl", "--params", PARAMS],
    ["calibrate", PUBLISHED, "--out", "{d}/LONG/p.json"],
    ["study", "ep-table", "--quick", "--out", "{d}/LONG"],
    ["bench", "--out", "{d}/LONG.jsonl"],
])
def test_path_too_long_for_the_file_system(argv, tmp_path, capsys, monkeypatch):
    """A path with a component over 255 characters (ENAMETOOLONG at its first stat) was
    `internal error: OSError: [Errno 36] File name too long`, exit 1, in every command."""
    monkeypatch.chdir(REPO)
    rc = main([a.replace("{d}", str(tmp_path)).replace("LONG", LONG) for a in argv])
    err = capsys.readouterr().err
    _one_line(rc, err, ("mok: error: ", "mok study: error: ", "mok bench: error: "),
              "a file name too long for this file system")


@pytest.mark.parametrize("tool, argv", [
    ("calibration.gemm_table", [PUBLISHED, "--out", "{d}/LONG.json"]),
    ("calibration.gemm_table", ["{d}/LONG.jsonl", "--out", "{d}/g.json"]),
    ("calibration.report_unseen", ["{d}/LONG.jsonl"]),
    ("mok_kernels.bench", ["--out", "{d}/LONG.jsonl"]),
])
def test_path_too_long_in_the_python_m_tools(tool, argv, tmp_path, capsys, monkeypatch):
    """The same in the tools that print their own error line (a traceback before)."""
    import importlib

    monkeypatch.chdir(REPO)
    mod = importlib.import_module(tool)
    entry = mod.cli if tool == "mok_kernels.bench" else mod.main
    rc = entry([a.replace("{d}", str(tmp_path)).replace("LONG", LONG) for a in argv])
    err = capsys.readouterr().err
    prefix = "mok bench: error: " if tool == "mok_kernels.bench" else f"python -m {tool}: error: "
    _one_line(rc, err, prefix, "a file name too long for this file system")


@pytest.mark.parametrize("argv", [
    ["predict", *W, "--params", "{d}/unread.json"],
    ["validate", "{d}/unread.jsonl", "--params", PARAMS],
    ["predict", "--hardware", "gb300-nvl72", "--model", "{d}/unread.toml", "--ep", "4",
     "--tokens", "64"],
])
def test_unreadable_input_file(argv, tmp_path, capsys, monkeypatch):
    """An input file this user may not read (chmod 000, as a user who is not root) was
    `internal error: PermissionError`, exit 1. Root reads any file, so the read is refused here
    as the OS would refuse it."""
    import pathlib

    monkeypatch.chdir(REPO)
    (tmp_path / "unread.json").write_text((REPO / PARAMS).read_text())
    (tmp_path / "unread.jsonl").write_text((REPO / PUBLISHED).read_text())
    (tmp_path / "unread.toml").write_text("hidden = 64\nexpert_width = 64\nrouted_experts = 8\n"
                                          "top_k = 2\n")
    real = pathlib.Path.read_text

    def read_text(self, *args, **kwargs):
        if self.name.startswith("unread."):
            raise PermissionError(13, "Permission denied", str(self))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(pathlib.Path, "read_text", read_text)
    rc = main([a.replace("{d}", str(tmp_path)) for a in argv])
    _one_line(rc, capsys.readouterr().err, "mok: error: ", "permission denied (this user may not open it)")


def test_route_cache_dir_too_long(tmp_path, capsys, monkeypatch):
    """MOK_ROUTE_CACHE_DIR naming a path too long for the file system: `internal error:
    OSError` from the environment check itself (every command and tool runs it first)."""
    monkeypatch.setenv("MOK_ROUTE_CACHE_DIR", str(tmp_path / LONG))
    rc = main(["predict", *W])
    _one_line(rc, capsys.readouterr().err, "mok: error: ",
              "environment variable MOK_ROUTE_CACHE_DIR: ")
