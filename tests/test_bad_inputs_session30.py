"""Bad input left unfixed by session 29's fuzzing (docs/bad-input.md "Session 29: bad input"), fixed in
session 30: absurd but finite hardware numbers, run records with a partial model shape, repeated
single-value flags, tools printing `mok: error:`, and `calibrate --base` naming no hardware.
Each case is one line naming the value and the rule, exit status 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mok_model.cli import main
from mok_model.errors import MokInputError
from mok_model.presets import HARDWARE_MAX, hardware_names, load_hardware

REPO = Path(__file__).resolve().parents[1]
W = ["--hardware", "gb300-nvl72", "--model", "kimi-k2", "--ep", "16", "--tokens", "64"]


def _one_line(rc: int, err: str, prefix: str, want: str) -> None:
    assert rc == 2, (rc, err)
    assert "Traceback" not in err and err.count("\n") == 1, err
    assert err.startswith(prefix), err
    assert want in err, err


def _gb300_body() -> str:
    hw = (REPO / "mok_model/presets/hardware.toml").read_text()
    block = hw[hw.index("[gb300-nvl72]"):hw.index("[gb300-nvl72.sources]")]
    return block.split("\n", 1)[1]


# ---- 1. hardware numbers in a plausible range ----

ABSURD_HARDWARE = [
    ("link_gbps = 900.0", "link_gbps = 1e30", "link_gbps=1e+30 must be at most 1,000,000 GB/s"),
    ("link_latency_us = 0.6", "link_latency_us = 1e300",
     "link_latency_us=1e+300 must be at most 10,000 us"),
    ("sms = 148", "sms = 1000000000000", "sms=1000000000000 must be at most 16,384 SMs"),
    ("bf16_tflops = 2500.0", "bf16_tflops = 1e9", "bf16_tflops=1000000000.0 must be at most"),
    ("hbm_tbps = 8.0", "hbm_tbps = 80000.0", "hbm_tbps=80000.0 must be at most 10,000 TB/s"),
    ("hbm_gb = 288.0", "hbm_gb = 1e12", "hbm_gb=1000000000000.0 must be at most 1,000,000 GB"),
    ("domain_size = 72", "domain_size = 1000000000", "domain_size=1000000000 must be at most"),
    ("launch_us = 21.7", "launch_us = 1e7", "launch_us=10000000.0 must be at most 10,000 us"),
    ("scaleout_gbps = 100.0", "scaleout_gbps = 1e30", "scaleout_gbps=1e+30 must be at most"),
    ("switch_planes = 18", "switch_planes = 100000", "switch_planes=100000 must be at most 4,096"),
    ("rail_oversubscription = 1.0", "rail_oversubscription = 1e9",
     "rail_oversubscription=1000000000.0 must be at most 1,024"),
]


@pytest.mark.parametrize("old, new, want", ABSURD_HARDWARE, ids=[n for _, n, _ in ABSURD_HARDWARE])
def test_absurd_hardware_numbers_are_refused(old, new, want, tmp_path, capsys):
    body = _gb300_body()
    assert old in body
    path = tmp_path / "absurd.toml"
    path.write_text(body.replace(old, new))
    with pytest.raises(MokInputError, match="plausible range"):
        load_hardware(str(path))
    rc = main(["predict", "--hardware", str(path), *W[2:]])
    _one_line(rc, capsys.readouterr().err, "mok: error: hardware 'absurd': ", want)


@pytest.mark.parametrize("change, want", [({"sms": 132.5}, "sms=132.5 must be an integer"),
                                          ({"domain_size": 8.0}, "domain_size=8.0 must be an integer"),
                                          ({"link_gbps": 1e30}, "link_gbps=1e+30 must be at most"),
                                          ({"switch_planes": True}, "switch_planes=True must be a number")])
def test_what_if_copies_are_checked_the_same_way(change, want):
    with pytest.raises(MokInputError, match=want.replace("+", r"\+").replace(".", r"\.")):
        load_hardware("h200-hgx8").with_(**change)


def test_shipped_presets_and_the_studies_what_ifs_are_in_range():
    from studies.common import domain_variant
    for name in hardware_names():
        hw = load_hardware(name)
        for key, (high, _) in HARDWARE_MAX.items():
            assert getattr(hw, key) <= high / 10, (name, key)     # a margin of 10x at least
        domain_variant(hw, 1024, 4.0)           # the scale-up-domains study's largest point


# ---- 3. a single-value flag given twice ----

def _tool(module: str):
    import importlib

    return importlib.import_module(module).main


RUNS = "calibration/runs/published/gb300_table1.jsonl"
PARAMS = "mok_model/params/gb300-nvl72.json"
TWICE = [
    (main, ["predict", "--model", "kimi-k2", "--model", "glm-5", *W[:2], *W[4:]], "mok: error: ",
     "argument --model: given twice (--model 'kimi-k2', then --model 'glm-5')"),
    (main, ["predict", *W, "--pass", "bwd", "--pass", "fwd"], "mok: error: ", "argument --pass: given twice"),
    (main, ["simulate", *W, "--seed", "1", "--seed", "2"], "mok: error: ",
     "argument --seed: given twice (--seed 1, then --seed 2): it takes one value; give it once"),
    (main, ["tune", *W, "--top", "3", "--top", "5"], "mok: error: ", "argument --top: given twice"),
    (main, ["calibrate", RUNS, "--out", "{d}/a.json", "--out", "{d}/b.json"], "mok: error: ",
     "argument --out: given twice"),
    (main, ["validate", RUNS, "--params", PARAMS, "--params", PARAMS], "mok: error: ",
     "argument --params: given twice"),
    (main, ["study", "ep-table", "--out", "{d}/a", "--out", "{d}/b"], "mok study: error: ",
     "argument --out: given twice"),
    (main, ["bench", "--out", "{d}/a.jsonl", "--out", "{d}/b.jsonl"], "mok bench: error: ",
     "argument --out: given twice"),
    ("calibration.report", [RUNS, "--also", "{d}/a", "--also", "{d}/b"],
     "python -m calibration.report: error: ",
     "argument --also: given twice (--also {d}/a, then --also {d}/b): give it once, with all its "
     "values after it"),
    ("calibration.rerun", ["--first", RUNS, "--first", RUNS, "--second", RUNS],
     "python -m calibration.rerun: error: ", "argument --first: given twice"),
    ("calibration.gemm_table", [RUNS, "--out", "{d}/t.json", "--hardware", "h200-1", "--hardware",
                                "gb300-nvl72"], "python -m calibration.gemm_table: error: ",
     "argument --hardware: given twice"),
    ("calibration.gb300_knobs", ["--params", PARAMS, "--params", PARAMS],
     "python -m calibration.gb300_knobs: error: ", "argument --params: given twice"),
    ("calibration.fit_fabric", [RUNS, "--out", "{d}/p.json", "--hardware", "h200-hgx8",
                                "--hardware", "h200-hgx8"], "python -m calibration.fit_fabric: error: ",
     "argument --hardware: given twice"),
    ("calibration.list_check", ["--draws", "5", "--draws", "6"],
     "python -m calibration.list_check: error: ", "argument --draws: given twice (--draws 5, then"),
    ("calibration.register", ["--model", "glm-5", "--model", "kimi-k2", "--tokens", "64",
                              "--out", "{d}/r.jsonl"], "python -m calibration.register: error: ",
     "argument --model: given twice"),
    ("calibration.nvlink_bench", ["--out", "{d}/a.jsonl", "--out", "{d}/b.jsonl"],
     "calibration/nvlink_bench.py: error: ", "argument --out: given twice"),
    ("benchmarks.sustained_clock", ["--seconds", "5", "--seconds", "10"],
     "benchmarks/sustained_clock.py: error: ", "argument --seconds: given twice"),
]


@pytest.mark.parametrize("tool, argv, prefix, want", TWICE,
                         ids=[f"{t if isinstance(t, str) else 'mok'} {' '.join(a)}"[:80]
                              for t, a, _, _ in TWICE])
def test_a_single_value_flag_given_twice_is_refused(tool, argv, prefix, want, tmp_path, capsys,
                                                    monkeypatch):
    import torch

    monkeypatch.chdir(REPO)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    fn = _tool(tool) if isinstance(tool, str) else tool
    rc = fn([a.replace("{d}", str(tmp_path)) for a in argv])
    _one_line(rc, capsys.readouterr().err, prefix, want.replace("{d}", str(tmp_path)))
    assert not list(tmp_path.iterdir()), "a refused command wrote a file"


def test_flags_that_may_repeat_still_do(tmp_path, capsys):
    """--prior NAME=FILE is documented as repeatable (action="append"); a boolean flag twice
    says the same thing twice."""
    from calibration.gb300_knobs import main as knobs

    rc = knobs(["--prior", "a=" + str(tmp_path / "a.json"), "--prior", "b=" + str(tmp_path / "b.json")])
    err = capsys.readouterr().err
    assert rc == 2 and "given twice" not in err and "no such file" in err, err
    assert main(["predict", *W, "--json", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["latency_ms"] > 0


# ---- 4. each tool's error line names the tool, not `mok` ----

def _calibration_tools() -> list[str]:
    return sorted(f.stem for f in (REPO / "calibration").glob("*.py")
                  if "def main(argv" in f.read_text())


@pytest.mark.parametrize("name", _calibration_tools())
def test_each_calibration_tool_names_itself_in_its_error_line(name, capsys, monkeypatch):
    """gemm_table, gb300_knobs, report_passes and fit_fabric printed `mok: error:`;
    heldout_errors, report_auto and report_unseen `NAME: ...` without `error:`; nvlink_bench
    `nvlink_bench: error:` while its --help said calibration/nvlink_bench.py."""
    import torch

    monkeypatch.chdir(REPO)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    rc = _tool(f"calibration.{name}")(["--no-such-flag"])
    prog = "calibration/nvlink_bench.py" if name == "nvlink_bench" else f"python -m calibration.{name}"
    _one_line(rc, capsys.readouterr().err, f"{prog}: error: ",
              f"(see `{prog} --help`)")


@pytest.mark.parametrize("module, argv, prog, want", [
    ("calibration.gemm_table", [RUNS, "--out", "{d}/t.txt"], "python -m calibration.gemm_table",
     "must name a .json file"),
    ("calibration.report_unseen", ["{d}/none.jsonl"],
     "python -m calibration.report_unseen", "none.jsonl"),
    ("calibration.report_auto", ["{d}/none.jsonl"], "python -m calibration.report_auto", "none.jsonl"),
    ("calibration.heldout_errors", ["--sim-every", "0"], "python -m calibration.heldout_errors",
     "--sim-every: 0 must be an integer >= 1"),
    ("benchmarks.kernel_space", ["{d}/none.jsonl"], "benchmarks/kernel_space.py", "none.jsonl"),
])
def test_checks_after_parsing_name_the_tool_too(module, argv, prog, want, tmp_path, capsys,
                                                monkeypatch):
    monkeypatch.chdir(REPO)
    rc = _tool(module)([a.replace("{d}", str(tmp_path)) for a in argv])
    _one_line(rc, capsys.readouterr().err, f"{prog}: error: ", want)


# ---- 5. calibrate --base must name its hardware ----

@pytest.mark.parametrize("hardware", ["", "  ", None])
def test_calibrate_base_naming_no_hardware_is_refused(hardware, tmp_path, capsys, monkeypatch):
    """A parameters file whose hardware is "" (or absent, read as "") was taken as a base for
    any hardware; every other command refuses a file of other hardware."""
    monkeypatch.chdir(REPO)
    doc = json.loads((REPO / PARAMS).read_text())
    if hardware is None:
        del doc["hardware"]
    else:
        doc["hardware"] = hardware
    base = tmp_path / "base.json"
    base.write_text(json.dumps(doc))
    rc = main(["calibrate", RUNS, "--out", str(tmp_path / "p.json"), "--base", str(base)])
    named = hardware or ""
    _one_line(rc, capsys.readouterr().err, "mok: error: ",
              f"--base {str(base)!r}: hardware={named!r} names no hardware")
    assert not (tmp_path / "p.json").exists()
    if hardware is None:                      # the same file naming its hardware is taken
        doc["hardware"] = "gb300-nvl72"
        base.write_text(json.dumps(doc))
        assert main(["calibrate", RUNS, "--out", str(tmp_path / "p.json"), "--base", str(base),
                     "--band", "none"]) == 0


# ---- 2. a run record's model shape: complete, never filled from kimi-k2 ----

def _record(**change) -> dict:
    rec = json.loads((REPO / RUNS).read_text().splitlines()[0])
    return {**rec, **change}


@pytest.mark.parametrize("drop", ["hidden", "expert_width", "routed_experts", "top_k"])
def test_a_layer_record_with_a_partial_shape_is_refused(drop, tmp_path, capsys, monkeypatch):
    from mok_model.presets import load_model
    from mok_model.records import read_records

    monkeypatch.chdir(REPO)
    m = load_model("glm-5")
    shape = {"name": "glm-like", "hidden": m.hidden, "expert_width": m.expert_width,
             "routed_experts": m.routed_experts, "top_k": m.top_k}
    del shape[drop]
    path = tmp_path / "partial.jsonl"
    path.write_text(json.dumps(_record(model=shape)) + "\n")
    with pytest.raises(MokInputError, match=rf"partial.jsonl:1: .*missing field\(s\) \['{drop}'\]"):
        read_records([path])
    rc = main(["validate", str(path), "--params", PARAMS])
    _one_line(rc, capsys.readouterr().err, "mok: error: ", f"partial.jsonl:1: model 'glm-like': "
              f"missing field(s) ['{drop}']")


def test_a_complete_shape_takes_a_model_files_defaults_not_kimi_k2s():
    from mok_model.presets import load_model, model_from_shape

    shape = {"hidden": 7168, "expert_width": 2048, "routed_experts": 384, "top_k": 8}
    m = model_from_shape(shape)
    assert (m.shared_experts, m.shared_width, m.moe_layers, m.layers) == (0, 0, 1, 1)
    # kimi-k2 has a shared expert: the shape said none, and none is what the file format says
    assert load_model("kimi-k2").shared_experts == 1
    # a caller may name the preset to fill from, explicitly
    assert model_from_shape({"top_k": 4}, base="kimi-k2").shared_experts == 1
    with pytest.raises(MokInputError, match=r"missing field\(s\) \['expert_width', 'hidden', "
                                            r"'routed_experts'\]"):
        model_from_shape({"top_k": 4})


def test_microbenchmark_records_keep_their_partial_shapes_and_shipped_records_are_valid():
    """micro-* records name the rows they moved ({"hidden": 7168}) and the published deepep /
    hybridep rates the exchange's dimensions; no reader makes a layer of them."""
    from mok_model.records import LAYER_SYSTEMS, read_records, record_files, validate_record

    validate_record(_record(system="micro-copy", model={"hidden": 7168}))
    files = record_files(REPO / "calibration/runs", "**/*.jsonl")
    records = [r for f in files for r in read_records([f])]
    assert len(files) > 100 and len(records) > 20000
    partial = [r for r in records if isinstance(r["model"], dict) and "expert_width" not in r["model"]]
    assert partial and not any(r["system"] in LAYER_SYSTEMS for r in partial)


def test_the_reduce_microbenchmark_reads_its_own_width_and_slots_not_a_layers():
    """calibration.micro made a kimi-k2 layer of a micro-reduce record ({"hidden": H}) to read
    its top_k (8, as it happens the benchmark's k); now H from the record, k from its metrics
    or the benchmark's fixed REDUCE_SLOTS, the hardware from its preset."""
    from calibration.micro import REDUCE_SLOTS, _reduce_model
    from mok_model.params import load_params

    p = load_params(None, "h200-1")
    rec = _record(system="micro-reduce", model={"hidden": 4096}, tokens=1024,
                  hardware={"preset": "h200-1"}, metrics={"tokens": 1024})
    hbm = load_hardware("h200-1").hbm_tbps * 1e12 * p["hbm_eff"]
    want = 1024 * 4096 * 2.0 * (REDUCE_SLOTS + 2) / hbm
    assert _reduce_model([rec])(p)[0] == pytest.approx(want)
    rec["metrics"]["k"] = 4
    assert _reduce_model([rec])(p)[0] == pytest.approx(want * 6 / 10)
    with pytest.raises(MokInputError, match="must name its hidden width"):
        _reduce_model([{**rec, "model": {"top_k": 8}}])
