"""Bad input found by session 35's pass over every entry point (after sessions 29, 30 and 34).
Each case is one line naming the value and the rule, exit status 2, nothing written; the cases
that must still pass are checked beside them."""

from __future__ import annotations

import importlib

import pytest

from mok_model.cli import main

from test_bad_inputs_session30 import _one_line  # the one-line check


# ---- a model file's numbers in a plausible range (as a hardware file's, session 30) ----

MODEL = {"hidden": 1024, "expert_width": 512, "routed_experts": 64, "top_k": 4,
         "shared_experts": 1, "shared_width": 512, "moe_layers": 2, "layers": 4}


@pytest.mark.parametrize("key, value, want", [
    ("shared_width", 10 ** 18, "shared_width=1000000000000000000 must be at most 2,097,152"),
    ("shared_experts", 10 ** 14, "shared_experts=100000000000000 must be at most 1,024"),
    ("top_k", 8192, "top_k=8192 must be at most 1,024"),
    ("hidden", 2_000_000, "hidden=2000000 must be at most 1,048,576"),
    ("expert_width", 10 ** 15, "expert_width=1000000000000000 must be at most 2,097,152"),
    ("layers", 10 ** 18, "layers=1000000000000000000 must be at most 100,000"),
])
def test_absurd_model_numbers_are_refused(key, value, want, tmp_path, capsys):
    """A model TOML file's shared_width 10^18 (or shared_experts 10^14) printed a latency of
    10^12 ms, exit 0; top_k 8192 of 2^20 experts ran for minutes (each token's experts are drawn
    distinct); layers 10^18 was taken. Only routed_experts had a bound."""
    fields = {**MODEL, key: value, "routed_experts": 1 << 20 if key == "top_k" else 64}
    model = tmp_path / "m.toml"
    model.write_text("".join(f"{k} = {v}\n" for k, v in fields.items()))
    rc = main(["predict", "--hardware", "gb300-nvl72", "--model", str(model), "--ep", "4",
               "--tokens", "64"])
    _one_line(rc, capsys.readouterr().err, "mok: error: model 'm': ", want)


def test_shipped_models_are_well_inside_the_bounds():
    from mok_model.presets import MODEL_MAX, load_model, model_names

    for name in model_names():
        m = load_model(name)
        for key, high in MODEL_MAX.items():
            assert getattr(m, key) <= high / 64, (name, key)    # a margin of 64x at least


# ---- mok --version ----

@pytest.mark.parametrize("argv", [["--version"], ["--version", "predict"]])
def test_version(argv, capsys):
    """`mok --version` was `the following arguments are required: COMMAND`, exit 2. It prints
    the package's version (the one pyproject.toml builds with), exit 0."""
    import tomllib

    import mok_model
    from test_bad_inputs_session30 import REPO

    assert main(argv) == 0
    assert capsys.readouterr().out == f"mok {mok_model.__version__}\n"
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "mok_model.__version__"}


# ---- a job's --deadline-s: (0, one week] ----

DEADLINE_TOOLS = ["mok_kernels.tile_sweep", "mok_kernels.space_sweep", "mok_kernels.sweep_job",
                  "calibration.nvlink_bench"]


@pytest.mark.parametrize("value", ["0", "-0", "1e12", "1e300"])
@pytest.mark.parametrize("module", DEADLINE_TOOLS)
def test_deadline_out_of_range(module, value, tmp_path, capsys, monkeypatch):
    """`--deadline-s 0` stopped a sweep before its first point (tile_sweep wrote the GEMMs-alone
    record of one workload and exited 0); 1e12 overflows nvlink_bench's watchdog
    (faulthandler: timestamp out of range) after the GPU check."""
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    rc = importlib.import_module(module).main(["--out", str(tmp_path / "r.jsonl"),
                                               "--deadline-s", value])
    prog = "calibration/nvlink_bench.py" if module == "calibration.nvlink_bench" else \
        f"python -m {module}"
    _one_line(rc, capsys.readouterr().err, f"{prog}: error: ",
              f"argument --deadline-s: {value} must be a finite number in (0, 604800]")
    assert not (tmp_path / "r.jsonl").exists()


@pytest.mark.parametrize("module", DEADLINE_TOOLS)
def test_deadline_in_range_reaches_the_gpu_check(module, tmp_path, capsys, monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    rc = importlib.import_module(module).main(["--out", str(tmp_path / "r.jsonl"),
                                               "--deadline-s", "0.5"])
    err = capsys.readouterr().err
    assert rc == 2 and "needs a CUDA GPU" in err, err


# ---- a grid value named twice in another spelling ----

SAME_VALUE = [
    ("mok_kernels.bench", ["--capacity", "0.5,0.50"], "--capacity '0.5,0.50' names '0.5' (and as "
                                                      "'0.50') twice"),
    ("mok_kernels.bench", ["--tokens", "64,064"], "--tokens '64,064' names '64' (and as '064')"),
    ("mok_kernels.bench", ["--model", "kimi-k2,kimi-k2.7-code"],
     "--model 'kimi-k2,kimi-k2.7-code' names 'kimi-k2' (and as 'kimi-k2.7-code') twice"),
    ("mok_kernels.bench", ["--routing", "zipf:1.2,zipf:1.20"], "names 'zipf:1.2' (and as "
                                                               "'zipf:1.20') twice"),
    ("mok_kernels.tile_sweep", ["--workloads", "kimi-k2:8:64,kimi-k2:08:64"],
     "names 'kimi-k2:8:64' (and as 'kimi-k2:08:64') twice"),
    ("mok_kernels.space_sweep", ["--eps", "8,8.0"], "--eps '8,8.0' names '8' (and as '8.0') twice"),
    ("mok_kernels.tune_job", ["--models", "glm-5,glm-5.2"], "names 'glm-5' (and as 'glm-5.2')"),
]


@pytest.mark.parametrize("module, argv, want", SAME_VALUE, ids=[" ".join(a) for _, a, _ in SAME_VALUE])
def test_grid_value_twice_in_another_spelling(module, argv, want, tmp_path, capsys, monkeypatch):
    """A list naming one value twice was refused only when spelled the same: `--capacity
    0.5,0.50`, `--tokens 64,064`, `--model kimi-k2,kimi-k2.7-code` (an alias), `--routing
    zipf:1.2,zipf:1.20` reached the GPU and ran the same points twice."""
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    mod = importlib.import_module(module)
    out = [] if module == "mok_kernels.tune_job" else ["--out", str(tmp_path / "r.jsonl")]
    rc = (mod.cli if module == "mok_kernels.bench" else mod.main)([*out, *argv])
    prog = "mok bench" if module == "mok_kernels.bench" else f"python -m {module}"
    _one_line(rc, capsys.readouterr().err, f"{prog}: error: ", want)


@pytest.mark.parametrize("argv", [["--capacity", "0.5,1"], ["--tokens", "64,640"],
                                  ["--routing", "zipf:1.2,hot:0.1,uniform"],
                                  ["--model", "kimi-k2,glm-5", "--ep", "8,16"]])
def test_distinct_grid_values_reach_the_gpu_check(argv, tmp_path, capsys, monkeypatch):
    import torch

    from mok_kernels.bench import cli

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    rc = cli(["--out", str(tmp_path / "r.jsonl"), *argv])
    err = capsys.readouterr().err
    assert rc == 2 and "needs a CUDA GPU" in err, err


# ---- python -m calibration.report on records it cannot report ----

def test_report_needs_two_models_and_two_token_counts(tmp_path, capsys, monkeypatch):
    """`python -m calibration.report` on records of one model fitted on all of them, then died
    in a traceback (JSONDecodeError: the cross-validation by model printed an error, not JSON).
    Now refused before the first fit."""
    from calibration.report import main as report
    from test_bad_inputs_session30 import REPO

    lines = (REPO / "calibration/runs/published/gb300_table1.jsonl").read_text().splitlines()
    runs = tmp_path / "kimi.jsonl"
    runs.write_text("\n".join(ln for ln in lines if '"model": "kimi-k2"' in ln) + "\n")
    monkeypatch.chdir(REPO)
    rc = report([str(runs), "--out", str(tmp_path / "out")])
    _one_line(rc, capsys.readouterr().err, "python -m calibration.report: error: ",
              "RUN_FILES: the report holds out each model in turn, and the layer records have "
              "model ['kimi-k2'] only")
    assert not (tmp_path / "out" / "h200-all.json").exists()


def test_report_regret_table_without_a_sweep(capsys):
    """`python -m calibration.report calibration/runs/published/gb300_table1.jsonl` (no knob
    sweep in the records) ended in `ZeroDivisionError` after its fits: the regret table of no
    rows. It prints calibration.regret's message instead (the whole run takes 30 s; here the
    table alone, from the document regret --json prints)."""
    from calibration.report import _regret_table

    msg = "no workload in 1 file(s) (5 MoK records) has a measured sweep of >= 8 distinct knob configs"
    _regret_table({"workloads": [], "message": msg})
    assert capsys.readouterr().out == msg + "\n"


# ---- an input file that is a folder, named as one ----

@pytest.mark.parametrize("argv, want", [
    (["predict", "--hardware", "{d}/x.toml", "--model", "kimi-k2", "--ep", "16", "--tokens", "64"],
     "hardware file '{d}/x.toml' is a folder; name a TOML file"),
    (["predict", "--hardware", "gb300-nvl72", "--model", "{d}/x.toml", "--ep", "16", "--tokens",
      "64"], "model file '{d}/x.toml' is a folder; name a TOML file"),
    (["calibrate", "calibration/runs/published/gb300_table1.jsonl", "--out", "{d}/p.json",
      "--gemm-table", "{d}/x.json"], "GEMM table '{d}/x.json': no such file (it is a folder)"),
])
def test_input_file_that_is_a_folder(argv, want, tmp_path, capsys, monkeypatch):
    """A model / hardware TOML or a GEMM table named by a folder read "does not exist" / "no such
    file", as if the path were missing."""
    from test_bad_inputs_session30 import REPO

    monkeypatch.chdir(REPO)
    (tmp_path / "x.toml").mkdir()
    (tmp_path / "x.json").mkdir()
    rc = main([a.replace("{d}", str(tmp_path)) for a in argv])
    _one_line(rc, capsys.readouterr().err, "mok: error: ", want.replace("{d}", str(tmp_path)))


@pytest.mark.parametrize("value, want", [("", "--from-json '': a file path is required"),
                                         ("{d}", "--from-json '{d}': no such file (it is a folder)")])
def test_report_space_from_json_empty_or_folder(value, want, tmp_path, capsys):
    """`python -m calibration.report_space --from-json ''` read the folder '.': "not a JSON file
    ([Errno 21] Is a directory: '.')"."""
    from calibration.report_space import main as report_space

    rc = report_space(["--from-json", value.replace("{d}", str(tmp_path))])
    _one_line(rc, capsys.readouterr().err, "python -m calibration.report_space: error: ",
              want.replace("{d}", str(tmp_path)))


# ---- local worker processes: at most 4 per core ----

def test_study_workers_beyond_the_machine(tmp_path, capsys):
    """`mok study NAME --workers 100000` started one process per grid point at once (a pool
    of Python's fork start method starts them all), each with its own copy of the model."""
    import os

    rc = main(["study", "ep-table", "--quick", "--out", str(tmp_path / "o"), "--workers", "100000"])
    cores = os.cpu_count() or 1
    _one_line(rc, capsys.readouterr().err, "mok study: error: ",
              f"--workers 100000 must be at most {4 * cores} (4 per core; this machine has {cores})")
    assert not (tmp_path / "o").exists()


def test_report_space_jobs_beyond_the_machine(capsys, monkeypatch):
    """`python -m calibration.report_space RUNS --jobs 100000` forked 100,000 processes (the
    pool's size, not the folds')."""
    import os

    from calibration.report_space import main as report_space
    from test_bad_inputs_session30 import REPO

    monkeypatch.chdir(REPO)
    rc = report_space(["calibration/runs/published/gb300_table1.jsonl", "--jobs", "100000"])
    _one_line(rc, capsys.readouterr().err, "python -m calibration.report_space: error: ",
              f"--jobs 100000 must be at most {4 * (os.cpu_count() or 1)} (4 per core")


def test_local_processes_within_the_bound():
    import os

    from mok_model.cli import local_processes

    assert local_processes("--workers", 4 * (os.cpu_count() or 1)) == 4 * (os.cpu_count() or 1)


# ---- a degraded link keeps at least a millionth of its bandwidth (or fails: 0) ----

W = ["--hardware", "gb300-nvl72", "--model", "kimi-k2", "--ep", "16", "--tokens", "64"]


@pytest.mark.parametrize("factor", ["1e-320", "1e-300", "1e-7"])
def test_degrade_factor_near_zero(factor, capsys):
    """`mok simulate --degrade gpu1:1e-320` ended in `internal error: the simulation broke an
    invariant` (exit 1, after numpy's overflow warnings); gpu1:1e-300 printed a latency of
    10^300 ms."""
    rc = main(["simulate", *W, "--degrade", f"gpu1:{factor}"])
    _one_line(rc, capsys.readouterr().err, "mok: error: ",
              f"--degrade 'gpu1:{factor}': --degrade takes TARGET:FACTOR[,TARGET:FACTOR...] with "
              f"FACTOR 0 (failed) or in [1e-06, 1]")


@pytest.mark.parametrize("spec", ["gpu1:1e-6", "gpu3.p0:0"])
def test_degrade_factor_allowed(spec):
    from mok_model.sim.network import parse_degrade

    target, factor = spec.split(":")
    assert parse_degrade(spec) == [(target, float(factor))]


# ---- a hardware's rates and sizes: a floor beside session 30's ceiling ----

def _gb300_body() -> str:
    from test_bad_inputs_session30 import REPO

    hw = (REPO / "mok_model/presets/hardware.toml").read_text()
    return hw[hw.index("[gb300-nvl72]"):hw.index("[gb300-nvl72.sources]")].split("\n", 1)[1]


TINY_HARDWARE = [
    ("link_gbps = 900.0", "link_gbps = 1e-300", "link_gbps=1e-300 must be at least 1 GB/s"),
    ("hbm_tbps = 8.0", "hbm_tbps = 1e-300", "hbm_tbps=1e-300 must be at least 0.01 TB/s"),
    ("bf16_tflops = 2500.0", "bf16_tflops = 1e-320", "bf16_tflops=1e-320 must be at least 1 TFLOP/s"),
    ("hbm_gb = 288.0", "hbm_gb = 0.001", "hbm_gb=0.001 must be at least 1 GB"),
    ("scaleout_gbps = 100.0", "scaleout_gbps = 1e-9", "scaleout_gbps=1e-09 must be at least 0.1 GB/s"),
]


@pytest.mark.parametrize("old, new, want", TINY_HARDWARE, ids=[n for _, n, _ in TINY_HARDWARE])
def test_tiny_hardware_numbers_are_refused(old, new, want, tmp_path, capsys, monkeypatch):
    """A hardware TOML file's link_gbps (or hbm_tbps) 1e-300 printed a latency of 10^300 ms,
    exit 0; bf16_tflops 1e-320 a memory error of nonsense numbers ("need 0.0152 GB, more than
    the 144 GB"). Only an upper bound (session 30) and > 0 were checked."""
    from test_bad_inputs_session30 import REPO

    monkeypatch.chdir(REPO)
    body = _gb300_body()
    assert old in body
    path = tmp_path / "tiny.toml"
    path.write_text(body.replace(old, new))
    rc = main(["predict", "--hardware", str(path), "--model", "kimi-k2", "--ep", "16", "--tokens",
               "64", "--params", "mok_model/params/gb300-nvl72.json", "--allow-params-mismatch"])
    _one_line(rc, capsys.readouterr().err, "mok: error: hardware 'tiny': ", want)


def test_shipped_hardware_is_well_above_the_floor():
    from mok_model.presets import HARDWARE_MIN, hardware_names, load_hardware

    for name in hardware_names():
        hw = load_hardware(name)
        for key, (low, _) in HARDWARE_MIN.items():
            assert getattr(hw, key) == 0 or getattr(hw, key) >= 80 * low, (name, key)
    load_hardware("h200-hgx8").with_(scaleout_gbps=0.0, mxfp8_tflops=0.0)    # 0: none, allowed


# ---- --routing zipf:S / hot:F: S and F plain numbers ----

@pytest.mark.parametrize("spec, example", [("hot:0.1 ", "hot:0.1"), ("zipf:1_0", "zipf:1.2"),
                                           ("zipf:\u0661.\u0662", "zipf:1.2"), ("hot:x", "hot:0.1")])
def test_routing_number_is_plain(spec, example, capsys):
    """`--routing 'hot:0.1 '` ran (while ' hot:0.1' was refused), `zipf:1_0` ran as zipf:10 and
    Arabic-Indic digits as 1.2: float() takes them all. And `hot:x` suggested hot:1.2, itself
    refused (the hot share is at most 1/top_k)."""
    rc = main(["predict", *W, "--routing", spec])
    _one_line(rc, capsys.readouterr().err, "mok: error: ",
              f"--routing {spec!r}: {spec.split(':')[0]} takes a number, as in {example}")


@pytest.mark.parametrize("spec", ["zipf:1.2", "zipf:.5", "zipf:1e0", "hot:0.1", "hot:1E-2"])
def test_routing_plain_numbers_pass(spec):
    from mok_model.workload import parse_routing

    assert parse_routing(spec, 8)[1] == float(spec.split(":")[1])


# ---- calibration.register: a grid value once, as `mok bench` ----

@pytest.mark.parametrize("argv, want", [
    (["--tokens", "64,64"], "--tokens '64,64' names '64' twice"),
    (["--tokens", "64,064"], "--tokens '64,064' names '64' (and as '064') twice"),
    (["--ep", "16,16"], "--ep '16,16' names '16' twice"),
    (["--model", "kimi-k2,kimi-k2.7-code"], "names 'kimi-k2' (and as 'kimi-k2.7-code') twice"),
    (["--routing", "uniform,uniform"], "--routing 'uniform,uniform' names 'uniform' twice"),
    (["--dispatch", "pull,pull"], "--dispatch 'pull,pull' names 'pull' twice"),
    (["--comm-sms", "32,32"], "--comm-sms '32,32' names '32' twice"),
])
def test_register_grid_value_twice(argv, want, tmp_path, capsys):
    """`python -m calibration.register --tokens 64,64` (any grid flag) registered every planned
    run twice: the registration is written once and the run records then match a line twice."""
    from calibration.register import main as register

    flags = {"--model": "kimi-k2", "--tokens": "64", **dict(zip(argv[::2], argv[1::2]))}
    out = tmp_path / "reg.jsonl"
    rc = register([*(w for kv in flags.items() for w in kv), "--out", str(out)])
    _one_line(rc, capsys.readouterr().err, "python -m calibration.register: error: ", want)
    assert not out.exists()


def test_aot_tokens_beyond_any_gpu(tmp_path, capsys, monkeypatch):
    """`python -m mok_kernels.aot --tokens 99999999999999` passed every check: the launch's
    buffers (made on the host to compile it) and a Python loop over EP x tokens rows would run
    out of memory or never end. Refused as `mok bench` refuses it, before the Triton check."""
    import torch

    from mok_kernels.aot import main as aot

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    rc = aot(["--tokens", "99999999999999", "--out", str(tmp_path / "o")])
    _one_line(rc, capsys.readouterr().err, "python -m mok_kernels.aot: error: ",
              "--tokens 99999999999999 at EP 8 (kimi-k2): the weights and input buffers alone need")
    assert not (tmp_path / "o").exists()


def test_report_space_empty_table_system(capsys, monkeypatch):
    """`python -m calibration.report_space RUNS --table-system ''` took '' as the name of the
    GEMM-phase records' system (none matched it); gemm_table's --system '' is refused."""
    from calibration.report_space import main as report_space
    from test_bad_inputs_session30 import REPO

    monkeypatch.chdir(REPO)
    rc = report_space(["calibration/runs/published/gb300_table1.jsonl", "--table-system", ""])
    _one_line(rc, capsys.readouterr().err, "python -m calibration.report_space: error: ",
              "--table-system '': a system name is required")


# ---- mok tune --table: every flag it would ignore is named ----

@pytest.mark.parametrize("extra, want", [(["--fp8-kernel", "gluon"], "drop --fp8-kernel gluon"),
                                         (["--fp8-kernel", "bogus"], "drop --fp8-kernel bogus"),
                                         (["--seed", "3"], "drop --seed 3")])
def test_tune_table_names_what_it_would_ignore(extra, want, tmp_path, capsys):
    """`mok tune --table FILE --fp8-kernel gluon` (or any --fp8-kernel) wrote the BF16 table,
    the flag ignored, exit 0; the other refused flags were not named."""
    table = tmp_path / "t.json"
    rc = main(["tune", "--hardware", "gb300-nvl72", "--model", "kimi-k2", "--ep", "16", "--table",
               str(table), "--tokens-buckets", "64", *extra])
    _one_line(rc, capsys.readouterr().err, "mok: error: --table is the megakernel's choice: ", want)
    assert not table.exists()
