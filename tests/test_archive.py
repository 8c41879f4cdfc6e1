"""Archived run-record files (NAME.jsonl.gz, calibration/archive.py): read as the plain file
was, never appended to, written deterministically; folder readers take both forms."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from calibration import archive
from mok_model.cli import main as mok_main
from mok_model.errors import MokInputError
from mok_model.fileio import file_text
from mok_model.records import append_records, read_records, record_files

REPO = Path(__file__).resolve().parents[1]
SHIPPED = REPO / "calibration" / "runs" / "h200_drawn" / "drawn6.jsonl.gz"   # archived
PARAMS = str(REPO / "mok_model" / "params" / "h200-1.json")


def _lines(n: int = 12) -> list[str]:
    return [ln for ln in file_text(SHIPPED).splitlines() if ln.strip()][:n]


def _plain(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n")
    return path


def _strip(records: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if not k.startswith("_")} for r in records]


def test_round_trip_reads_the_same_records_and_removes_the_plain_file(tmp_path, capsys):
    src = _plain(tmp_path / "runs.jsonl", _lines())
    want = _strip(read_records([src]))
    data = src.read_bytes()
    assert archive.main([str(src)]) == 0
    gz = tmp_path / "runs.jsonl.gz"
    assert not src.exists() and gz.is_file() and gzip.decompress(gz.read_bytes()) == data
    got = read_records([gz])
    assert _strip(got) == want and got[0]["_file"] == str(gz) and got[0]["_line"] == 1
    assert "runs.jsonl.gz" in capsys.readouterr().out
    assert list(tmp_path.iterdir()) == [gz]          # no temporary file left behind


def test_the_archive_is_the_same_bytes_every_time(tmp_path):
    """gzip level 9, mtime 0, no file name: the bytes depend on the records alone."""
    lines = _lines()
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    _plain(a / "one.jsonl", lines)
    _plain(b / "other_name.jsonl", lines)
    assert archive.main([str(a / "one.jsonl")]) == 0
    assert archive.main([str(b / "other_name.jsonl")]) == 0
    first, second = (a / "one.jsonl.gz").read_bytes(), (b / "other_name.jsonl.gz").read_bytes()
    assert first == second == archive.gzip_bytes(("\n".join(lines) + "\n").encode())
    assert first[3] == 0 and first[4:8] == b"\0\0\0\0"      # no FNAME flag, mtime 0


def test_shipped_archives_are_as_the_tool_writes_them():
    """Every archived file under calibration/runs/ is what `calibration.archive` writes of its
    content (deterministic: archiving it again gives the same bytes)."""
    files = [f for f in record_files(REPO / "calibration" / "runs", "**/*.jsonl")
             if f.name.endswith(".gz")]
    assert len(files) >= 100
    for f in files[::10]:
        data = f.read_bytes()
        assert archive.gzip_bytes(gzip.decompress(data)) == data, f


def test_an_archived_file_is_never_appended_to(tmp_path):
    gz = tmp_path / "runs.jsonl.gz"
    gz.write_bytes(archive.gzip_bytes(("\n".join(_lines(2)) + "\n").encode()))
    before = gz.read_bytes()
    rec = json.loads(_lines(3)[2])
    with pytest.raises(MokInputError, match=r"runs.jsonl.gz: an archived record file \(.gz\) is "
                                            r"read-only; append the records to a new .jsonl file"):
        append_records(gz, [rec])
    with pytest.raises(MokInputError, match="read-only"):
        append_records(tmp_path / "new.jsonl.gz", [rec])     # not even a new one
    assert gz.read_bytes() == before and not (tmp_path / "new.jsonl.gz").exists()
    # nor is its plain name written beside it before any work (its records would lie twice)
    from mok_kernels.bench import check_records_out
    with pytest.raises(MokInputError, match=r"--out '.*runs.jsonl': that file is archived as "
                                            r"runs.jsonl.gz, which is read-only"):
        check_records_out(str(tmp_path / "runs.jsonl"))
    assert not (tmp_path / "runs.jsonl").exists()


def test_a_plain_name_of_an_archived_file_says_where_it_lies(tmp_path):
    """A command written before a file was archived names NAME.jsonl: refused, naming the .gz."""
    gz = tmp_path / "runs.jsonl.gz"
    gz.write_bytes(archive.gzip_bytes(("\n".join(_lines(2)) + "\n").encode()))
    with pytest.raises(MokInputError, match=r"runs.jsonl: no such run-record file; it is archived "
                                            r"as runs.jsonl.gz \(name that file\)"):
        read_records([tmp_path / "runs.jsonl"])


def test_a_glob_reads_plain_and_archived_files_alike(tmp_path):
    lines = _lines(9)
    _plain(tmp_path / "bench_a.jsonl", lines[:3])
    (tmp_path / "bench_b.jsonl.gz").write_bytes(archive.gzip_bytes(("\n".join(lines[3:6]) + "\n")
                                                                   .encode()))
    _plain(tmp_path / "bench_c.jsonl", lines[6:])
    _plain(tmp_path / "other.jsonl", lines[:1])
    (tmp_path / "bench_d.txt.gz").write_bytes(b"")
    files = record_files(tmp_path, "bench_*.jsonl")
    assert [f.name for f in files] == ["bench_a.jsonl", "bench_b.jsonl.gz", "bench_c.jsonl"]
    assert [r["id"] for r in read_records(files)] == [json.loads(x)["id"] for x in lines]
    assert [f.name for f in record_files(tmp_path)] == [
        "bench_a.jsonl", "bench_b.jsonl.gz", "bench_c.jsonl", "other.jsonl"]
    sub = tmp_path / "sub"
    sub.mkdir()
    shutil.copy(tmp_path / "bench_b.jsonl.gz", sub / "deep.jsonl.gz")
    assert "sub/deep.jsonl.gz" in {f.relative_to(tmp_path).as_posix()
                                   for f in record_files(tmp_path, "**/*.jsonl")}
    _plain(tmp_path / "bench_b.jsonl", lines[3:6])        # the same file both ways
    with pytest.raises(MokInputError, match="bench_b.jsonl and bench_b.jsonl.gz: one record file "
                                            "both plain and archived"):
        record_files(tmp_path, "bench_*.jsonl")


def test_a_bad_archive_is_one_line_naming_file_and_line(tmp_path):
    lines = _lines(3)
    bad = tmp_path / "bad.jsonl.gz"
    bad.write_bytes(archive.gzip_bytes((lines[0] + "\n{not json\n").encode()))
    with pytest.raises(MokInputError, match=r"bad.jsonl.gz:2: not JSON"):
        read_records([bad])
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(archive.gzip_bytes(("\n".join(lines) + "\n").encode())[:-12])
    with pytest.raises(MokInputError, match=r"cut.jsonl.gz: not a whole gzip file"):
        read_records([cut])
    plain = tmp_path / "plain.jsonl.gz"
    plain.write_text(lines[0] + "\n")                      # named .gz, not compressed
    with pytest.raises(MokInputError, match=r"plain.jsonl.gz: not a whole gzip file"):
        read_records([plain])
    empty = tmp_path / "empty.jsonl.gz"
    empty.write_bytes(archive.gzip_bytes(b"\n"))
    with pytest.raises(MokInputError, match=r"empty.jsonl.gz: holds no run records"):
        read_records([empty])


@pytest.mark.parametrize("make, argv, want", [
    (None, ["{d}/x.txt"], "x.txt: not a .jsonl run-record file"),
    (None, ["{d}/x.jsonl.gz"], "x.jsonl.gz: already archived"),
    (None, ["{d}/none.jsonl"], "none.jsonl: no such run-record file"),
    ("bad", ["{d}/r.jsonl"], "r.jsonl:2: not JSON"),
    ("both", ["{d}/r.jsonl"], "r.jsonl.gz exists already"),
    ("ok", ["{d}/r.jsonl", "{d}/r.jsonl"], "r.jsonl: named twice"),
    (None, [], "the following arguments are required"),
])
def test_the_tool_refuses_bad_input_in_one_line_and_changes_nothing(make, argv, want, tmp_path,
                                                                     capsys):
    lines = _lines(2)
    if make == "bad":
        (tmp_path / "r.jsonl").write_text(lines[0] + "\n{not json\n")
    elif make in ("both", "ok"):
        _plain(tmp_path / "r.jsonl", lines)
    if make == "both":
        (tmp_path / "r.jsonl.gz").write_bytes(b"x")
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    assert archive.main([a.replace("{d}", str(tmp_path)) for a in argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("python -m calibration.archive: error: ")
    assert want in err[0]
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


def test_validate_reads_an_archive_as_the_plain_file(tmp_path, capsys):
    lines = _lines(20)
    src = _plain(tmp_path / "v.jsonl", lines)
    assert mok_main(["validate", str(src), "--params", PARAMS, "--json"]) == 0
    plain = json.loads(capsys.readouterr().out)
    assert archive.main([str(src)]) == 0
    capsys.readouterr()
    assert mok_main(["validate", str(src) + ".gz", "--params", PARAMS, "--json"]) == 0
    packed = json.loads(capsys.readouterr().out)
    assert packed["rows"] == plain["rows"] and len(plain["rows"]) > 5
