"""Run records name the kernel source they timed (software.kernel_source, session 35)."""

from __future__ import annotations

from mok_kernels.bench import _software, kernel_source_digest


def test_the_digest_follows_the_sources(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "__init__.py").write_text("")
    (tmp_path / "sub" / "b.py").write_text("y = 2\n")
    (tmp_path / "logs_s1").mkdir()                                 # a folder of scripts
    (tmp_path / "logs_s1" / "probe.py").write_text("z = 1\n")
    (tmp_path / "notes.md").write_text("not a source\n")
    first = kernel_source_digest(tmp_path)
    assert len(first) == 16 and int(first, 16) >= 0
    assert kernel_source_digest(tmp_path) == first                 # deterministic
    (tmp_path / "notes.md").write_text("changed\n")
    assert kernel_source_digest(tmp_path) == first                 # only *.py count
    (tmp_path / "logs_s1" / "probe.py").write_text("z = 2\n")
    (tmp_path / "logs_s1" / "more.py").write_text("w = 1\n")
    assert kernel_source_digest(tmp_path) == first                 # only the package's modules
    (tmp_path / "sub" / "b.py").write_text("y = 3\n")
    assert kernel_source_digest(tmp_path) != first                 # a source changed
    (tmp_path / "sub" / "b.py").write_text("y = 2\n")
    (tmp_path / "sub" / "b.py").rename(tmp_path / "b.py")
    assert kernel_source_digest(tmp_path) != first                 # a file moved


def test_records_carry_it():
    sw = _software()
    assert sw["kernel_source"] == kernel_source_digest()
    assert set(sw) == {"torch", "triton", "commit", "kernel_source"}
