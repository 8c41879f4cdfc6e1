"""Bad input found by session 34's new-user pass over every entry point (after sessions 29 and
30's fuzzing). Each case is one line naming the value and the rule, exit status 2, and nothing
written or changed."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import mok_model.params
from mok_model.cli import main

REPO = Path(__file__).resolve().parents[1]
W = ["--hardware", "gb300-nvl72", "--model", "kimi-k2", "--ep", "16", "--tokens", "64"]


def _one_line(rc: int, err: str, prefix: str, want: str) -> None:
    assert rc == 2, (rc, err)
    assert "Traceback" not in err and err.count("\n") == 1, err
    assert err.startswith(prefix), err
    assert want in err, err


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
