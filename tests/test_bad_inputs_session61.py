"""Session 61 (a helper's fuzzing pass: mok predict / tune --table / simulate with odd model and
hardware files, routings, tokens, EP and knobs; calibration.registered / regret / report_space /
draw_shapes / register and mok validate with missing, empty, truncated and wrong-schema files;
benchmarks/narrow_diag.py's new --dispatch, --routing and --seed). Each test is one fault found.
CPU only, a few seconds; nothing is written into the repository."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from cli_errors import one_error

ROOT = Path(__file__).resolve().parent.parent
# a model whose 7 other experts cannot fill a token's top-8 when expert 0 is hot
EIGHT_OF_EIGHT = "hidden = 2048\nexpert_width = 768\nrouted_experts = 8\ntop_k = 8\n"


@pytest.fixture
def no_cuda(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


# ---------------------------------------------------------------------- benchmarks/narrow_diag.py

ND = "benchmarks/narrow_diag.py"


@pytest.mark.parametrize("argv, want", [
    # hot:X was checked against top_k 1: a share the workloads' top-8 cannot take reached the GPU
    (["--routing", "hot:0.5"], "1/top_k = 0.125"),
    # a routing file was taken (mok predict reads one; the kernel draws its routes, and refused
    # it on the GPU only)
    (["--routing", "README.md"], "the kernel takes uniform, zipf:S, hot:X, onehot"),
    # hot routing of a model whose other experts cannot fill top_k reached the GPU too
    (["--workloads", "{d}/e8k8.toml:8:256", "--routing", "hot:0.1"],
     "the other 7 experts cannot fill a token's top_k = 8 slots"),
])
def test_narrow_diag_checks_the_routing_as_the_kernel_reads_it(argv, want, tmp_path, no_cuda,
                                                               capsys, monkeypatch):
    """--routing was read by mok_model's parser with top_k 1, before the no-GPU refusal: a hot
    share above 1/top_k of the workloads' models, a routing file, and hot routing the model
    cannot route all passed, to fail only on a GPU. Now the kernel's reading (mok bench's),
    per workload, before the GPU check."""
    (tmp_path / "e8k8.toml").write_text(EIGHT_OF_EIGHT)
    monkeypatch.chdir(ROOT)
    tool = importlib.import_module("benchmarks.narrow_diag")
    assert tool.main([a.replace("{d}", str(tmp_path)) for a in argv]) == 2
    err = one_error(capsys.readouterr().err, ND)
    assert want in err and "CUDA" not in err


def test_narrow_diag_takes_onehot_as_mok_bench_does(no_cuda, capsys):
    """Its help says the routing is read as mok bench reads it, and onehot was refused as
    'neither an existing file nor one of ...': it now reaches the GPU check like mok bench."""
    tool = importlib.import_module("benchmarks.narrow_diag")
    assert tool.main(["--routing", "onehot"]) == 2
    assert "needs a CUDA GPU" in one_error(capsys.readouterr().err, ND)


def test_bench_refuses_hot_routing_the_model_cannot_route(tmp_path, no_cuda, capsys):
    """mok bench --routing hot:0.1 with a model of 8 experts, top-8 passed its checks and met
    check_hot_fits only in make_routing on the GPU: refused before the GPU check now."""
    from mok_kernels import bench

    (tmp_path / "e8k8.toml").write_text(EIGHT_OF_EIGHT)
    assert bench.cli(["--model", str(tmp_path / "e8k8.toml"), "--ep", "8", "--tokens", "256",
                 "--routing", "hot:0.1", "--out", str(tmp_path / "r.jsonl")]) == 2
    assert "cannot fill a token's top_k = 8" in one_error(capsys.readouterr().err, "mok bench")
    assert not (tmp_path / "r.jsonl").exists()


# --------------------------------------------------------------------- calibration.report_space

def test_report_space_names_an_empty_path_as_given(capsys):
    """`python -m calibration.report_space ''` said ".: no such run-record file (it is a
    folder)": the files were tidied with Path() before they were read, as gemm_table's were
    until session 58. They are read as named."""
    from calibration.report_space import main

    assert main([""]) == 2
    err = one_error(capsys.readouterr().err, "python -m calibration.report_space")
    assert "'': an empty path; name a run-record file" in err


@pytest.mark.parametrize("argv, want", [
    (["--push-loop", "tiles,soon", "--dispatch", "push"], "--push-loop 'soon': allowed tiles, shares"),
    # the loops are push dispatch's: with pull alone the flag would do nothing, without a word
    (["--push-loop", "shares"], "the loops are push dispatch's; add push to --dispatch"),
])
def test_narrow_diag_push_loop_is_checked_before_the_gpu(argv, want, no_cuda, capsys):
    tool = importlib.import_module("benchmarks.narrow_diag")
    assert tool.main(argv) == 2
    err = one_error(capsys.readouterr().err, ND)
    assert want in err and "CUDA" not in err

