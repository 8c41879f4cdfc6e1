"""Archive finished run-record files: NAME.jsonl becomes NAME.jsonl.gz, read by every tool as before.

    python -m calibration.archive FILE.jsonl [FILE.jsonl ...]

Each FILE is checked (every record valid, as read_records reads it), written as FILE.gz
deterministically (gzip level 9, no name and no time in its header: the same records give the
same bytes on every machine), read back and compared record by record with FILE, and only then
is FILE removed. An archived file is read-only (mok_model.records.append_records refuses it):
archive a file once no run appends to it, and name the .gz path wherever the file is named
(parameters' fitted_on, code, documents). Refused, before anything is written: a FILE that is
not a .jsonl file, a FILE.gz that exists already, a record that is not valid, or one FILE twice.
"""

from __future__ import annotations

import argparse
import gzip
import io
import os
import sys
from pathlib import Path

from mok_model.cli import MokParser, run_tool
from mok_model.errors import MokInputError
from mok_model.fileio import writable, archive_of, archived, atomic_path
from mok_model.records import read_records

LEVEL = 9  # gzip compression level: fixed, so an archive's bytes depend on its records alone


def gzip_bytes(data: bytes) -> bytes:
    """`data` gzip-compressed deterministically: level LEVEL, mtime 0, no file name."""
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", compresslevel=LEVEL, mtime=0, filename="") as gz:
        gz.write(data)
    return buf.getvalue()


def _strip(records: list[dict]) -> list[dict]:
    """The records as written (without the reader's _file and _line)."""
    return [{k: v for k, v in r.items() if not k.startswith("_")} for r in records]


def check(paths: list[str]) -> list[tuple[Path, list[dict]]]:
    """Refuse what `archive` refuses, before any file is written; each path to archive with its
    records as written (read once: `archive` compares its archive with them)."""
    out: list[tuple[Path, list[dict]]] = []
    for name in paths:
        if not name.strip():
            raise MokInputError(f"{name!r}: an empty path; name a .jsonl run-record file")
        p = Path(name)
        if archived(p):
            raise MokInputError(f"{name}: already archived (a .gz file)")
        if p.suffix != ".jsonl":
            raise MokInputError(f"{name}: not a .jsonl run-record file")
        target = archive_of(p)
        if (target.exists() or target.is_symlink()) and not p.exists():
            raise MokInputError(f"{name}: archived already, as {target}")
        if target.exists() or target.is_symlink():
            raise MokInputError(f"{name}: {target} exists already; remove it or keep {p.name}")
        if p.resolve() in {q.resolve() for q, _ in out}:
            raise MokInputError(f"{name}: named twice")
        folder = p.parent if str(p.parent) else Path(".")
        if p.exists() and not (writable(folder, os.W_OK | os.X_OK) and writable(p, os.W_OK)):
            # archiving writes NAME.gz beside it and removes NAME: a read-only file or folder
            # says neither may change (the rule every output follows, root included)
            raise MokInputError(f"{name}: it or its folder is read-only; archiving would write "
                                f"{target.name} and remove {p.name}: make both writable first")
        # every record valid: a file that fails is left as it is
        out.append((p, _strip(read_records([p]))))
    return out


def archive(path: Path, before: list[dict]) -> Path:
    """Write path.gz (gzip_bytes of path's bytes), check that it reads back as the same bytes
    and as `before`, path's records (check), in the same order, then remove path; the archive's
    path. path.gz is written atomically (never left behind if the check fails)."""
    target = archive_of(path)
    data = path.read_bytes()
    with atomic_path(target) as tmp:
        tmp.write_bytes(gzip_bytes(data))
        after = _strip(read_records([tmp]))
        if after != before or gzip.decompress(tmp.read_bytes()) != data:
            raise MokInputError(f"{path}: its archive does not read back as its records; "
                                f"nothing changed")
    os.unlink(path)
    return target


def _run(a: argparse.Namespace) -> None:
    for p, records in check(a.files):
        size = p.stat().st_size
        target = archive(p, records)
        print(f"{p} -> {target}: {size:,} -> {target.stat().st_size:,} bytes")


def main(argv: list[str] | None = None) -> int:
    ap = MokParser(prog="python -m calibration.archive", description=__doc__,
                   formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+", metavar="FILE.jsonl", help="run-record files to archive")
    return run_tool(ap, _run, argv)


if __name__ == "__main__":
    sys.exit(main())
