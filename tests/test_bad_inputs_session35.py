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
