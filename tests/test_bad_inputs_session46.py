"""Inputs of session 46: a hardware file's [sources] table is checked like its numbers, and the
engines study's --random / --seed like every count."""

from __future__ import annotations

import pytest

from mok_model.cli import main
from mok_model.presets import hardware_names, load_hardware

from test_bad_inputs_session30 import _gb300_body, _one_line


@pytest.mark.parametrize("sources,want", [
    ('[sources]\nlink_gbps = 5\n', "sources.link_gbps=5 must be a non-empty string"),
    ('[sources]\nlink_gbps = ""\n', "sources.link_gbps='' must be a non-empty string"),
    ('[sources]\nlink_gbs = "spec"\n', "sources.link_gbs names no hardware field"),
    ('[sources]\n[sources.link_gbps]\nx = "spec"\n', "sources.link_gbps={'x': 'spec'} must be"),
])
def test_a_hardware_files_sources_are_citations(tmp_path, capsys, sources, want):
    path = tmp_path / "hw.toml"
    path.write_text(_gb300_body() + sources)
    rc = main(["predict", "--hardware", str(path), "--model", "kimi-k2", "--ep", "8",
               "--tokens", "256"])
    _one_line(rc, capsys.readouterr().err, "mok: ", want)


def test_every_preset_cites_its_numbers(tmp_path):
    """Every hardware preset's [sources] names each number it sets (the file's own rule), and a
    user's file may leave the table out."""
    for name in hardware_names():
        hw = load_hardware(name)
        numbers = {"sms", "bf16_tflops", "fp8_tflops", "hbm_tbps", "hbm_gb", "link_gbps",
                   "link_latency_us", "domain_size", "launch_us"}
        assert numbers <= set(hw.sources), (name, sorted(numbers - set(hw.sources)))
    path = tmp_path / "hw.toml"
    path.write_text(_gb300_body())
    assert load_hardware(str(path)).sources == {}


@pytest.mark.parametrize("argv,want", [(["--random", "-5"], "--random: -5 must be an integer in [0, 100000]"),
                                       (["--random", "3", "--seed", "-1"],
                                        "--seed: -1 must be an integer in [0, 9223372036854775807]")])
def test_the_engines_study_refuses_bad_counts(capsys, argv, want):
    from mok_model.sim.study import main as study

    _one_line(study(argv), capsys.readouterr().err, "python -m mok_model.sim.study: error:", want)


def test_random_questions_are_seeded(capsys):
    """`python -m mok_model.sim.study --random N --seed S` asks the same questions for the same
    seed: its table and its worst cases repeat (the wall time aside)."""
    from mok_model.sim.study import main as study

    outs = []
    for _ in range(2):
        assert study(["--random", "4", "--seed", "7"]) == 0
        outs.append([line for line in capsys.readouterr().out.splitlines() if not line.startswith("(")])
    assert outs[0] == outs[1] and "4 random questions (seed 7)" in outs[0][0]
