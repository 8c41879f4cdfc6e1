"""Session 57 (a new user's walk through README.md, docs/knobs.md and docs/bad-input.md): the
messages that read wrong beside the docs. CPU only, a second or two; nothing is written into the
repository."""

from __future__ import annotations

from mok_model.cli import main


def test_one_emulated_peer_is_singular(capsys):
    """At EP 2 on a one-GPU preset the note read 'emulates the 1 peers'."""
    argv = ["--hardware", "h200-1", "--model", "qwen3-30b-a3b", "--ep", "2", "--tokens", "64"]
    assert main(["predict", *argv]) == 0
    out = capsys.readouterr().out
    assert "h200-1 emulates the 1 peer in local memory" in out and "1 peers" not in out
    assert main(["predict", *argv, "--system", "nccl-torch"]) == 0
    out = capsys.readouterr().out
    assert "h200-1 emulates the 1 peer for MoK" in out and "1 peers" not in out
    assert main(["predict", *argv[:-3], "4", "--tokens", "64"]) == 0
    assert "emulates the 3 peers in local memory" in capsys.readouterr().out


def test_unknown_routing_names_every_file_kind(capsys):
    """README's routing table takes .npy, .csv and whitespace text; the refusal named only .npy
    and whitespace text."""
    argv = ["predict", "--hardware", "h200-1", "--model", "qwen3-30b-a3b", "--ep", "2",
            "--tokens", "64", "--routing", "onehot"]
    assert main(argv) == 2
    lines = [x for x in capsys.readouterr().err.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("mok: error: "), lines
    assert ".npy, .csv or whitespace text" in lines[0]
