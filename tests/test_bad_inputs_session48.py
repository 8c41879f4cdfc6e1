"""Session 48's fuzzing of the `mok` CLI (about 1,400 cases): each fault found, fixed. Bad input
is one line naming the value and the rule (exit 2); valid input runs."""

from __future__ import annotations

import json

import numpy as np
import pytest

from mok_model.cli import main

from test_bad_inputs_session30 import _one_line

FWD = ["--hardware", "h200-hgx8", "--model", "kimi-k2", "--ep", "8", "--tokens", "1024"]

BAD = [
    # a 400-digit seed overflowed float (a traceback); 2^64 was taken where the bench caps 2^63-1
    (["predict", *FWD, "--seed", str(10 ** 400)], "--seed: 1000"),
    (["predict", *FWD, "--seed", str(2 ** 64)], "must be an integer in [0, 9223372036854775807]"),
    # int() reads Unicode digits and surrounding space: 64 from these
    (["predict", *FWD[:-1], "\u0666\u0664"], "--tokens: '\u0666\u0664' must be an integer >= 1"),
    (["predict", *FWD[:-1], " 64"], "--tokens: ' 64' must be an integer >= 1"),
    (["simulate", *FWD, "--degrade", "gpu\uff13:0.5"], "--degrade 'gpu\uff13:0.5'"),
    # --source-order where no schedule of ours takes it (it was accepted and changed nothing)
    (["predict", *FWD, "--pass", "bwd", "--source-order", "rotated"],
     "--source-order rotated with --pass bwd: that kernel's schedule is in rank order"),
    (["tune", *FWD, "--pass", "bwd", "--source-order", "rotated"],
     "--source-order rotated with --pass bwd"),
    (["simulate", *FWD, "--precision", "fp8", "--fp8-kernel", "gluon", "--source-order", "rotated"],
     "--source-order rotated with --fp8-kernel gluon"),
    (["predict", *FWD, "--system", "nccl-torch", "--source-order", "rank"],
     "--source-order rank applies to our megakernel (--system mok)"),
    # tune took an empty routing as uniform
    (["tune", *FWD, "--routing", ""], "--routing '' is empty"),
    # input the simulation itself refuses came after the scenario's warnings (EP 16 spans two
    # 8-GPU domains; a minibatch below a GEMM tile), two or three lines
    (["simulate", *FWD[:4], "--ep", "16", "--tokens", "1024", "--minibatch", "1"],
     "--minibatch 1: the simulator would walk"),
    (["simulate", "--hardware", "h200-hgx8", "--model", "qwen3-30b-a3b", "--ep", "16", "--tokens",
      "512", "--degrade", "nic0:0"], "leaves no bandwidth on gpu0 nic out"),
]


@pytest.mark.parametrize("argv, want", BAD, ids=[" ".join(a)[:80] for a, _ in BAD])
def test_bad_input_is_one_line(argv, want, capsys):
    rc = main(argv)
    _one_line(rc, capsys.readouterr().err, "mok: ", want)


def test_a_routing_file_of_huge_floats_is_named_without_numpy_noise(tmp_path, capsys):
    path = tmp_path / "huge.npy"
    np.save(path, np.full((8, 8), 1e300))
    rc = main(["predict", *FWD[:4], "--ep", "2", "--tokens", "4", "--routing", str(path)])
    _one_line(rc, capsys.readouterr().err, "mok: ", "holds ids as large as 1e+300")


@pytest.mark.parametrize("degrade", ["nic0:0.5", "rails:0.5"])
def test_scale_out_degrades_simulate_where_the_group_spans_domains(degrade, capsys):
    """EP 16 on 8-GPU domains: its NICs and rails exist, and degrading them slows the scale_out
    term. The one-domain pass the simulator splits that term from has neither: it once kept the
    spec and refused it ("no such scale-out NIC")."""
    args = ["simulate", "--hardware", "h200-hgx8", "--model", "qwen3-30b-a3b", "--ep", "16",
            "--tokens", "512", "--json"]
    assert main(args) == 0
    healthy = json.loads(capsys.readouterr().out)
    assert main([*args, "--degrade", degrade]) == 0
    slowed = json.loads(capsys.readouterr().out)
    assert slowed["latency_ms"] > healthy["latency_ms"]
    assert slowed["breakdown_ms"]["scale_out"] > healthy["breakdown_ms"]["scale_out"]
