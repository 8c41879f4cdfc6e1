"""Session 64 (a helper's fuzzing pass of `mok bench`): model shapes the megakernel refuses and
--bwd-tiles values that int() reads loosely or that repeat a field or a set reached the GPU
check; each is named now before it, in one line (exit 2). CPU only, a few seconds."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from cli_errors import one_error

ROOT = Path(__file__).resolve().parent.parent


def model_file(d: Path, name: str, hidden: int, width: int, shared: int, shared_width: int) -> str:
    """A model file in the presets' format; its path."""
    p = d / f"{name}.toml"
    p.write_text(f"hidden = {hidden}\nexpert_width = {width}\nrouted_experts = 64\ntop_k = 8\n"
                 f"shared_experts = {shared}\nshared_width = {shared_width}\n")
    return str(p)


def bench_error(argv: list[str], tmp_path: Path, capsys, monkeypatch) -> str:
    """`mok bench` on a machine without a CUDA GPU: exit 2 and its one error line."""
    import torch

    from mok_kernels import bench

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    rc = bench.cli(["--out", str(tmp_path / "r.jsonl"), *argv])
    err = capsys.readouterr().err
    assert rc == 2 and "Traceback" not in err, err
    assert not (tmp_path / "r.jsonl").exists()
    return one_error(err, "mok bench")


SHAPES = [
    # hidden 100: not whole 64-column K blocks (BF16 block_k)
    (("h100", 100, 512, 1, 512), [], "h100.toml: hidden size H=100 is not a multiple of 64"),
    # a shared width that is neither 0 nor the expert width
    (("sw100", 2048, 512, 1, 100), [], "sw100.toml: megakernel needs shared width 0 or 512, got 100"),
    # three shared experts of the expert width: 1536 columns together
    (("sh3", 2048, 512, 3, 512), [], "sh3.toml: megakernel needs shared width 0 or 512, got 1536"),
    # hidden 192 runs BF16 (3 x 64) but not FP8 (block_k 128)
    (("h192", 192, 512, 1, 512), ["--precision", "fp8"],
     "h192.toml with --precision fp8: hidden size H=192 is not a multiple of 128"),
    (("h192", 192, 512, 1, 512), ["--precision", "bf16,fp8", "--fp8-kernel", "v1,v5-bm64"],
     "with --precision fp8: hidden size H=192 is not a multiple of 128"),
    # the backward builds the BF16 forward layer; mok-gemm runs the megakernel's GEMM phases
    (("h100", 100, 512, 1, 512), ["--pass", "bwd"], "H=100 is not a multiple of 64"),
    (("h100", 100, 512, 1, 512), ["--systems", "mok-gemm"], "H=100 is not a multiple of 64"),
    (("sh3", 2048, 512, 3, 512), ["--gpus", "2"], "shared width 0 or 512, got 1536"),
]


@pytest.mark.parametrize("shape, argv, want", SHAPES, ids=[f"{s[0]} {' '.join(a)}"
                                                           for s, a, _ in SHAPES])
def test_bench_names_shapes_the_megakernel_refuses(shape, argv, want, tmp_path, capsys,
                                                   monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    m = model_file(tmp_path, *shape)
    line = bench_error(["--model", m, *argv], tmp_path, capsys, monkeypatch)
    assert f"--model {m}" in line and want in line, line


@pytest.mark.parametrize("shape, argv", [
    (("h192", 192, 512, 1, 512), []),                               # 3 x 64: BF16 runs it
    (("h100", 100, 512, 1, 512), ["--systems", "torch-grouped"]),   # no megakernel in the run
    (("sh0", 2048, 512, 0, 0), []),
])
def test_bench_shapes_the_kernel_runs_reach_the_gpu_check(shape, argv, tmp_path, capsys,
                                                          monkeypatch):
    m = model_file(tmp_path, *shape)
    line = bench_error(["--model", m, *argv], tmp_path, capsys, monkeypatch)
    assert "needs a CUDA GPU" in line, line


def test_shape_rule_is_one_function_without_torch():
    """The rule bench checks is the kernel's (MoKLayer calls tiles.shape_refusal), importable
    where torch is not."""
    code = ("import sys; sys.modules['torch'] = None\n"
            "from mok_kernels.tiles import shape_refusal\n"
            "assert shape_refusal(7168, 2048, 2048, 64) is None\n"
            "assert shape_refusal(7168, 2048, 0, 128) is None\n"
            "assert 'multiple of 64' in shape_refusal(100, 512, 512, 64)\n"
            "assert 'got 1536' in shape_refusal(2048, 512, 1536, 64)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert "shape_refusal(self.H, self.I, ishared, cfg.block_k)" in (
        ROOT / "mok_kernels" / "megakernel.py").read_text()


TILES = [
    # int() read these as 128, 64, 64 and 0
    ("bn_a=1_28", "--bwd-tiles 'bn_a=1_28': '1_28' is not an integer in plain ASCII digits"),
    ("bn_a=٦٤", "--bwd-tiles 'bn_a=٦٤': '٦٤' is not an integer in plain ASCII digits"),
    ("bn_a=+64", "--bwd-tiles 'bn_a=+64': '+64' is not an integer in plain ASCII digits"),
    ("w_flat=-0", "--bwd-tiles 'w_flat=-0': '-0' is not an integer in plain ASCII digits"),
    ("bn_a= 64", "--bwd-tiles 'bn_a= 64': ' 64' is not an integer in plain ASCII digits"),
    # a field given twice: the last value silently won
    ("bn_a=64,bn_a=128", "--bwd-tiles 'bn_a=64,bn_a=128': bn_a is given twice"),
    # a set given twice, also spelt otherwise: the same points ran twice
    ("default;default", "--bwd-tiles 'default;default' names 'default' twice: each tile set once"),
    ("w_flat=1;w_flat=01", "names 'w_flat=1' (and as 'w_flat=01') twice"),
    ("w_flat=1,a_fuse_gu=1;a_fuse_gu=1,w_flat=1",
     "names 'w_flat=1,a_fuse_gu=1' (and as 'a_fuse_gu=1,w_flat=1') twice"),
    # a negative value still gets its field's rule
    ("bn_x=-5", "--bwd-tiles 'bn_x=-5': bn_x=-5: tile sizes must be powers of two >= 16"),
]


@pytest.mark.parametrize("tiles, want", TILES, ids=[t for t, _ in TILES])
def test_bench_names_bad_bwd_tiles(tiles, want, tmp_path, capsys, monkeypatch):
    line = bench_error(["--pass", "bwd", "--bwd-tiles", tiles], tmp_path, capsys, monkeypatch)
    assert want in line, line


@pytest.mark.parametrize("tiles", ["default;w_flat=1;w_flat=1,a_fuse_gu=1,bn_x=256",
                                   "default;saved_gu=1;saved_gu=1,bn_a=128", "bn_x=0256"])
def test_bench_good_bwd_tiles_reach_the_gpu_check(tiles, tmp_path, capsys, monkeypatch):
    line = bench_error(["--pass", "bwd", "--bwd-tiles", tiles], tmp_path, capsys, monkeypatch)
    assert "needs a CUDA GPU" in line, line
