"""Files the tools write, checked before the work starts and written atomically; warnings.

Every output path is checked up front (its folder exists and is writable, it is not a folder),
so a long job never ends in a traceback that loses its result. Writes go to a temporary file in
the same folder, renamed over the target when complete: a reader never sees half a file.
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import sys
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from .errors import MokInputError


def check_output_file(path: str | os.PathLike, flag: str, suffix: str | None = None,
                      inputs: Iterable[tuple[str, str | os.PathLike | None]] = (),
                      replaces: tuple[str, ...] = ()) -> Path:
    """Refuse an output file that cannot be written: a missing or unwritable folder, a folder
    given as the file (or a path ending in a slash), an unwritable existing file, (if `suffix`)
    the wrong extension, or one of the command's `inputs` ((flag, path) pairs; a None path is
    not given): writing it would destroy what the command reads. `replaces`: the command
    rewrites the file whole (a trace, a table, parameters); the kinds (file_kind) it may replace:
    an existing file of one of them gets a warning line saying it will be replaced, a file of
    any other kind is refused (a parameters file is never replaced by a knob table)."""
    _not_empty(path, flag, "file")
    _nameable(path, flag)
    p = Path(path)
    if p.is_dir() or str(path).endswith(("/", os.sep)):
        raise MokInputError(f"{flag} {str(path)!r} is a folder; name a file inside it")
    if suffix and p.suffix.lower() != suffix:
        raise MokInputError(f"{flag} {str(path)!r} must name a {suffix} file")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise MokInputError(f"{flag} {str(path)!r}: folder {str(parent)!r} does not exist; create it "
                            f"first or name another path")
    if not writable(parent, os.W_OK | os.X_OK):
        raise MokInputError(f"{flag} {str(path)!r}: folder {str(parent)!r} is not writable; name "
                            f"another path")
    if p.exists() and not writable(p, os.W_OK):
        raise MokInputError(f"{flag} {str(path)!r} exists and is not writable; name another path")
    for in_flag, in_path in inputs:
        if in_path is not None and str(in_path).strip() and _same_file(p, Path(in_path)):
            raise MokInputError(f"{flag} {str(path)!r} is also the input {in_flag} {str(in_path)!r}; "
                                f"writing it would destroy what is read: name another file")
    _probe(parent, flag, path)
    if replaces and refuse_other_kind(p, flag, replaces):
        warn(f"{flag} {str(path)!r} exists; it will be replaced")
    return p


def refuse_other_kind(path: Path, flag: str, replaces: tuple[str, ...]) -> bool:
    """Whether `path` exists (and may be replaced); refused where it holds a kind (file_kind)
    other than `replaces`, the kinds the command writes."""
    if not path.exists():
        return False
    kind = file_kind(path)
    if kind != "" and kind not in replaces:
        raise MokInputError(f"{flag} {str(path)!r} exists and holds "
                            f"{'an unknown kind of file' if kind is None else repr(kind)}, not "
                            f"{' or '.join(map(repr, replaces))}, which this command writes: it "
                            f"is not replaced; name another file (or remove that one first)")
    return True


PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
TRACE_KIND = "trace"   # a Chrome/Perfetto trace (traceEvents), what `mok simulate --trace` writes


def file_kind(path: Path) -> str | None:
    """What an existing file holds, as check_output_file's `replaces` names it: "png", a JSON
    document's `schema` (e.g. "mok-params/1"), TRACE_KIND for a trace, "" for an empty file or
    an empty JSON object or list (nothing to lose); None for anything else."""
    try:
        with open(path, "rb") as f:
            head = f.read(len(PNG_MAGIC))
            if not head:
                return ""
            if head == PNG_MAGIC:
                return "png"
            doc = json.loads(head + f.read())
    except (OSError, ValueError):
        return None
    if doc in ({}, []):
        return ""
    if not isinstance(doc, dict):
        return None
    if isinstance(doc.get("schema"), str):
        return doc["schema"]
    return TRACE_KIND if "traceEvents" in doc else None


def check_beside_output(path: str | os.PathLike, out: str | os.PathLike, flag: str,
                        what: str) -> None:
    """Refuse a file written beside an output (`what`, e.g. a fit record in fit/NAME, made with
    its folder if missing) before the work: a file where its folder goes, or what
    check_output_file refuses of the file itself."""
    p = Path(path)
    if p.parent.exists() and not p.parent.is_dir():
        raise MokInputError(f"{flag} {str(out)!r}: its {what} goes to {str(p)!r}, but "
                            f"{str(p.parent)!r} is a file; name {flag} in another folder")
    if p.parent.is_dir():
        check_output_file(p, f"{flag}'s {what}", ".json")


def writable(path: Path, mode: int) -> bool:
    """os.access, and (for root, whom os.access always lets write) a write bit in the mode: a
    file or folder someone made read-only (chmod a-w) is not written over."""
    try:
        return os.access(path, mode) and bool(path.stat().st_mode & 0o222)
    except OSError:
        return False


def _same_file(a: Path, b: Path) -> bool:
    """Whether two paths name one file (the same inode where both exist, else the same
    absolute path)."""
    try:
        if a.exists() and b.exists():
            return os.path.samefile(a, b)
    except OSError:
        pass
    return a.resolve() == b.resolve()


def _nameable(path, flag: str) -> None:
    """Refuse a path the file system cannot name (longer than its limits: ENAMETOOLONG, which
    every later look at it would raise as an OSError)."""
    try:
        os.stat(path)
    except OSError as exc:
        if (bad := path_input_error(exc)) is not None:
            raise MokInputError(f"{flag} {bad}") from None


def _not_empty(path, flag: str, what: str) -> None:
    """Refuse an empty path (it would silently mean "no output" or the current folder)."""
    if not str(path).strip():
        raise MokInputError(f"{flag} {str(path)!r} is empty; name a {what}")


def _probe(folder: Path, flag: str, path) -> None:
    """Create and remove a file in `folder`: the one test of writability that never lies."""
    import tempfile  # late: 3 ms to import, and a process that only reads never needs it

    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        raise MokInputError(f"{flag} {str(path)!r}: cannot write in {str(folder)!r} "
                            f"({exc.strerror or exc}); name another path") from None


def check_output_dir(path: str | os.PathLike, flag: str) -> Path:
    """Create an output folder in a folder that exists (as every output file), or refuse one
    that is a file, lies under a file, or cannot be created or written."""
    _not_empty(path, flag, "folder")
    _nameable(path, flag)
    p = Path(path)
    for q in [p, *p.parents]:
        if q.exists():
            if not q.is_dir():
                what = "is a file" if q == p else f"lies under the file {str(q)!r}"
                raise MokInputError(f"{flag} {str(path)!r} {what}; name a folder")
            if q != p and not writable(q, os.W_OK | os.X_OK):   # never made in a chmod a-w one
                raise MokInputError(f"{flag} {str(path)!r}: folder {str(q)!r} is not writable; "
                                    f"name another folder")
            if q != p and q != p.parent:
                raise MokInputError(f"{flag} {str(path)!r}: folder {str(p.parent)!r} does not "
                                    f"exist; create it first or name another folder")
            break
    try:
        p.mkdir(exist_ok=True)
    except OSError as exc:
        raise MokInputError(f"{flag} {str(path)!r}: cannot create it ({exc.strerror or exc}); name "
                            f"another folder") from None
    if not writable(p, os.W_OK | os.X_OK):
        raise MokInputError(f"{flag} {str(path)!r} is not writable; name another folder")
    _probe(p, flag, path)
    return p


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside `path`; on success rename it over `path`, else remove it."""
    import tempfile  # late: 3 ms to import, and a process that only reads never needs it

    p = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp" + p.suffix, dir=p.parent or ".")
    os.close(fd)
    try:
        yield Path(tmp)
        os.chmod(tmp, 0o644)
        os.replace(tmp, p)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """Write text to `path` atomically (temporary file in the same folder, then rename)."""
    with atomic_path(path) as tmp:
        tmp.write_text(text)


# warnings held back while a command checks its input (deferred_warnings): None prints at once
_pending: list[str] | None = None


def warn(message: str) -> None:
    """One line on stderr for a legal but suspicious input; never on stdout. Inside
    deferred_warnings it waits until the input has passed every check, so that bad input is
    the one error line alone."""
    line = f"mok: warning: {message}"
    if _pending is not None:
        _pending.append(line)
    else:
        print(line, file=sys.stderr)


def flush_warnings() -> None:
    """Print the warnings held back so far, and any later ones at once (a long job is about to
    start: its warnings should not wait for its end)."""
    global _pending
    held, _pending = _pending or [], None
    for line in held:
        print(line, file=sys.stderr)


def drop_warnings() -> None:
    """Forget the warnings held back: the input was bad, its error line stands alone."""
    global _pending
    _pending = None


def path_input_error(exc: OSError) -> MokInputError | None:
    """The MokInputError an OSError stands for where it is the input's fault, not the
    system's: a path the user gave that is too long for the file system (ENAMETOOLONG, raised by
    the first stat of it, wherever that is), or a file the user may not read (EACCES, EPERM:
    outputs are probed for writing before the work, so this is an input); None for any other."""
    name = str(exc.filename if exc.filename is not None else "")
    shown = name if len(name) <= 60 else f"{name[:40]}...{name[-12:]}"
    if exc.errno == errno.ENAMETOOLONG:
        return MokInputError(f"{shown!r} ({len(name)} characters): a file name too long for this "
                             f"file system ({exc.strerror}); name a shorter path")
    if exc.errno in (errno.EACCES, errno.EPERM) and name:
        return MokInputError(f"{shown!r}: {exc.strerror.lower() if exc.strerror else 'not allowed'}"
                             f" (this user may not open it); change its permissions or name another file")
    return None


@contextlib.contextmanager
def deferred_warnings() -> Iterator[None]:
    """Hold a command's warnings until it ends (or flush_warnings: a long job starts); on bad
    input (MokInputError, or drop_warnings from a command that prints its own error) drop
    them: the error is the one line on stderr. A path too long for the file system is bad
    input too (path_input_error): it leaves as a MokInputError."""
    global _pending
    _pending = []
    try:
        yield
    except MokInputError:
        drop_warnings()
        raise
    except OSError as exc:
        if (bad := path_input_error(exc)) is None:
            raise
        drop_warnings()
        raise bad from None
    finally:
        flush_warnings()


def _one_value_a_key(pairs: list[tuple[str, Any]]) -> dict:
    """An object's pairs as a dict, refusing a key named twice (json.loads keeps the last
    silently: a hand-edited record or table would be read with one of two values)."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        keys = [k for k, _ in pairs]
        twice = next(k for k in keys if keys.count(k) > 1)
        raise json.JSONDecodeError(f"key {twice!r} given twice in one object", "", 0)
    return obj


def loads_json(text: str, **hooks) -> Any:
    """json.loads, where a document nested too deeply to read (RecursionError), holding an
    integer too long to read (Python's 4,300-digit limit) or naming a key twice in one object is
    malformed JSON (JSONDecodeError, which every reader turns into one line naming its file),
    never an internal error or a silent choice."""
    if "object_hook" not in hooks:
        hooks.setdefault("object_pairs_hook", _one_value_a_key)
    try:
        return json.loads(text, **hooks)
    except RecursionError:
        raise json.JSONDecodeError("nested too deeply to read", text, 0) from None
    except json.JSONDecodeError:
        raise
    except MokInputError:          # a hook's own refusal (a ValueError too)
        raise
    except ValueError:             # int(): "Exceeds the limit (4300 digits) ..."
        raise json.JSONDecodeError("an integer too long to read: more than 4,300 digits", text,
                                   0) from None


# the largest integer a JSON-lines record may hold: the largest float (an integer beyond it
# fails wherever it meets a float: "int too large to convert"); each field's own check refuses
# smaller ones out of its range, naming the field
JSON_INT_MAX = int(sys.float_info.max)


def read_json_lines(path: str | os.PathLike, kind: str, what: str,
                    check: Callable[[Any], None]) -> Iterator[tuple[str, int, Any]]:
    """(where, line number, object) of every non-blank line of a JSON-lines `kind` file holding
    `what` (e.g. "run-record", "run records"), each passed to `check` first; a NAME.gz file is
    read as gzip-compressed JSON lines (an archived record file). A missing, non-UTF-8 or empty
    file, a .gz file that is not whole gzip data, a line that is not JSON or one `check` refuses
    (MokInputError) stops the reader with its file and line."""
    if not str(path).strip():
        raise MokInputError(f"{str(path)!r}: an empty path; name a {kind} file")
    _nameable(path, f"{kind} file")
    path = Path(path)
    if not path.is_file():
        packed = archive_of(path)
        raise MokInputError(f"{path}: no such {kind} file"
                            + (" (it is a folder)" if path.is_dir() else "")
                            + (f"; it is archived as {packed.name} (name that file)"
                               if packed.is_file() else ""))
    try:
        text = file_text(path)
    except UnicodeDecodeError as exc:
        raise MokInputError(f"{path}: not UTF-8 text (byte {exc.start}"
                            f"{' of its content' if path.name.endswith('.gz') else ''}); {what} "
                            f"are JSON lines") from None
    except Exception as exc:    # OSError; gzip's errors (zlib.error is no OSError)
        if (bad := _read_error(path, exc, kind, what)) is None:
            raise
        raise bad from None
    if not text.strip():
        raise MokInputError(f"{path}: holds no {what} (an empty file)")
    for lineno, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        where = f"{path}:{lineno}"
        try:
            obj = loads_json(line, parse_constant=_not_a_json_number, parse_float=_finite,
                             parse_int=_int_in_float_range)
            check(obj)
        except json.JSONDecodeError as exc:
            raise MokInputError(f"{where}: not JSON ({exc.msg})") from None
        except MokInputError as exc:
            raise MokInputError(f"{where}: {exc}") from None
        yield where, lineno, obj


def archived(path: str | os.PathLike) -> bool:
    """Whether `path` names an archived record file: NAME.jsonl compressed with gzip as
    NAME.jsonl.gz (python -m calibration.archive), read by every reader as NAME.jsonl was, never
    appended to (README "Contract extensions")."""
    return str(path).endswith(".gz")


def archive_of(path: str | os.PathLike) -> Path:
    """Where `path`'s archive lies (NAME.jsonl -> NAME.jsonl.gz)."""
    path = Path(path)
    return path.with_name(path.name + ".gz")


def file_text(path: str | os.PathLike) -> str:
    """A text file's text as Path.read_text reads it (UTF-8; CR LF and CR read as LF), a NAME.gz
    file's decompressed first (an archived record file, calibration/archive.py). Raises what
    reading raises: OSError, UnicodeDecodeError, and for a .gz file that is not whole gzip data
    gzip.BadGzipFile, EOFError or zlib.error (read_json_lines turns each into one line)."""
    path = Path(path)
    if not archived(path):
        return path.read_text(encoding="utf-8")
    import gzip  # late: 2 ms to import, and only an archived file needs it

    raw = gzip.decompress(path.read_bytes())
    return raw.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")


def _read_error(path: Path, exc: Exception, kind: str, what: str) -> MokInputError | None:
    """The one-line MokInputError of a file that could not be read where it is the input's
    fault (path_input_error; a .gz file that is not whole gzip data), None otherwise."""
    if isinstance(exc, OSError) and (bad := path_input_error(exc)) is not None:
        return bad
    if archived(path):
        import gzip
        import zlib

        if isinstance(exc, (gzip.BadGzipFile, EOFError, zlib.error)):
            return MokInputError(f"{path}: not a whole gzip file ({exc}); a .gz {kind} file "
                                 f"holds {what} as gzip-compressed JSON lines")
    return None


def _not_a_json_number(text: str):
    """json.loads' hook for NaN, Infinity and -Infinity, which Python reads but JSON has not."""
    raise MokInputError(f"{text} is not a JSON number (a measured value must be finite; leave an "
                        f"unknown one out)")


def _finite(text: str) -> float:
    """json.loads' float hook: a literal too large for a float (1e999) would read as infinity."""
    value = float(text)
    if not math.isfinite(value):
        _not_a_json_number(text)
    return value


def _int_in_float_range(text: str) -> int:
    """json.loads' int hook: an integer larger than any float (up to Python's 4,300-digit limit
    that int() refuses) is no number a record holds."""
    digits = len(text.lstrip("-"))
    if digits > 309 or abs(value := int(text)) > JSON_INT_MAX:
        raise MokInputError(f"the integer {text[:12]}... ({digits} digits) is larger than any "
                            f"number a record holds (at most {sys.float_info.max:.3g})")
    return value
