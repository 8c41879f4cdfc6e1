"""Bad input found by session 45's fuzzing of benchmarks/auto_plan.py, calibration.report_space
and `mok bench`: one line naming the value and the rule, exit status 2, nothing printed or written
(an auto plan is whole or absent)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from test_bad_inputs_session30 import REPO, _one_line

MODEL = "hidden = 1024\nexpert_width = 2048\nrouted_experts = {e}\ntop_k = {k}\n"


def _auto_plan(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "benchmarks/auto_plan.py", *argv], capture_output=True,
                          text=True, cwd=REPO, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO)})


@pytest.mark.parametrize("argv, want", [
    # hot:0.5 was planned for kimi-k2 (top_k 8), exit 0; calibration.register then refused it
    (["--workloads", "kimi-k2:8:1024", "--routing", "hot:0.5"],
     "--routing 'hot:0.5': the hot expert's share of routes must be in (0, 1/top_k = 0.125]"),
    # hot:1.5 was checked against top_k 1
    (["--workloads", "kimi-k2:8:1024", "--routing", "hot:1.5"], "1/top_k = 0.125]"),
    # the told pick refused it after 30 lines were printed
    (["--workloads", "kimi-k2:8:1024", "--routing", "hot:0.2", "--auto-hint"],
     "--routing 'hot:0.2': the hot expert's share of routes must be in (0, 1/top_k = 0.125]"),
    # the second workload's model is the one that cannot take it
    (["--workloads", "kimi-k2:8:64,{d}/k64.toml:8:64", "--routing", "hot:0.1"],
     "--routing 'hot:0.1': the hot expert's share of routes must be in (0, 1/top_k = 0.01562], "
     "since a token routes to an expert at most once (workload {d}/k64.toml:8:64)"),
    (["--workloads", "{d}/k8of8.toml:8:64", "--routing", "hot:0.1"],
     "--routing 'hot:0.1': the other 7 experts cannot fill a token's top_k = 8 slots"),
    (["--workloads", "kimi-k2:8:64", "--routing", "onehot", "--auto-hint"],
     "--routing 'onehot' with --auto-hint: the tuner is told uniform, zipf:S or hot:F only"),
])
def test_auto_plan_checks_the_routing_against_every_model_first(argv, want, tmp_path):
    (tmp_path / "k8of8.toml").write_text(MODEL.format(e=8, k=8))
    (tmp_path / "k64.toml").write_text(MODEL.format(e=256, k=64))
    r = _auto_plan(*[x.replace("{d}", str(tmp_path)) for x in argv])
    assert r.returncode == 2 and r.stdout == "", (r.returncode, r.stdout[-300:])
    _one_line(r.returncode, r.stderr, "benchmarks/auto_plan.py: error: ",
              want.replace("{d}", str(tmp_path)))


def test_auto_plan_prints_whole_plans(tmp_path):
    """Valid routings still plan every line: 30 swept settings and the pick (and the told pick)
    per workload; a model of top_k 64 (robust's hot share at most 1/64) plans too."""
    (tmp_path / "k64.toml").write_text(MODEL.format(e=256, k=64))
    r = _auto_plan("--workloads", "kimi-k2:8:1024,qwen3-30b-a3b:8:4096", "--routing", "hot:0.1",
                   "--auto-hint")
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert len(r.stdout.splitlines()) == 64 and '"arg": 0.1' in r.stdout
    r = _auto_plan("--workloads", f"{tmp_path / 'k64.toml'}:8:1024")
    assert r.returncode == 0 and len(r.stdout.splitlines()) == 31, r.stderr


def test_report_space_checks_the_table_system_first(capsys, monkeypatch):
    """`--table-system foo` read and fitted for minutes, then failed with "a fold has no foo
    records"."""
    from calibration import report_space

    def no_reading(*_):
        raise AssertionError("records read before --table-system was checked")

    monkeypatch.chdir(REPO)
    monkeypatch.setattr(report_space, "read_records", no_reading)
    rc = report_space.main(["calibration/runs/published/gb300_table1.jsonl", "--table-system",
                            "foo"])
    _one_line(rc, capsys.readouterr().err, "python -m calibration.report_space: error: ",
              "--table-system 'foo': choose from gemm-only, mok-gemm")


@pytest.mark.parametrize("argv, want", [
    (["--gpus", "-1"], "--gpus -1: must be 0 (one GPU emulating its peers) to 2147483647"),
    (["--gpus", "-1", "--ep", "8"], "--gpus -1: must be 0"),
    (["--gpus", "99999999999"], "--gpus 99999999999: must be 0"),
    (["--routing", "uniform,,zipf:1"],
     "--routing 'uniform,,zipf:1': an empty item in the list (a comma list of uniform, zipf:S"),
    (["--routing", ""], "--routing '': an empty item in the list"),
    (["--routing", "zipf:1,"], "--routing 'zipf:1,': an empty item in the list"),
])
def test_bench_names_the_flag_at_fault(argv, want, tmp_path, capsys, monkeypatch):
    """`--gpus -1` was reported as `--ep '-1'`, an empty --routing item as a missing file ''."""
    import torch

    from mok_kernels import bench

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    rc = bench.cli(["--out", str(tmp_path / "r.jsonl"), *argv])
    _one_line(rc, capsys.readouterr().err, "mok bench: error: ", want)
    assert not (tmp_path / "r.jsonl").exists()
