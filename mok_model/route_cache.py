"""Route statistics kept across processes: a seeded routing's row counts (workload.Traffic) on
disk, so that a process's first question of a workload reads them instead of drawing and counting
every route again (a million routes at kimi-k2 EP 16 x 8,192 tokens: ~6.5 ms; a read: ~0.1 ms).

An entry is one file named by a hash of its key: the full inputs (routing, EP, tokens, experts,
top-k, seed, zipf order, draw), numpy's version, the CPU features numpy dispatches on and a hash
of workload.py (the code that draws and counts), so a changed input, numpy, CPU or workload.py
never reads another's entry. The file holds one line of JSON (format, key, SHA-256 of the
arrays' bytes) and the two arrays, little-endian int64, zlib-compressed (about a fifth: 10 KB at
EP 16). It is written to a temporary file beside it and renamed. An entry that cannot be read,
whose key or checksum does not match, or whose counts do not conserve the routes is ignored, and
the answer is computed and written again: the cache is never the only way to an answer, and a
miss answers exactly as without it. The folder keeps at most MAX_ENTRIES entries: past them, one
write in 16 (the entries whose hex name starts with 0) removes the least recently used quarter.

A second kind of entry, one line of JSON, keeps which of several token draws a rule chose to
stand for a routing (workload._median_draw draws and ranks every candidate, which costs more
than a read at any number of routes); it is checked and ignored the same way. A third, also one
line of JSON, keeps a layer's knob answer (mok_kernels/knobs.py: the tuner's choice for one
question), keyed by the question and a hash of the model's code, presets and parameters files.

    MOK_ROUTE_CACHE_DIR   where the entries live (default $XDG_CACHE_HOME/mok/routes, else
                          ~/.cache/mok/routes)
    MOK_ROUTE_CACHE=0     no cache (neither read nor written; also "off", "false", "no")

MOK_ROUTE_CACHE_DIR is mok's own: a bad one is refused (check_env). The default folder follows
variables every program shares, so a bad one is said in one warning and the tool runs on: an
XDG_CACHE_HOME that is not an absolute path is ignored (the XDG Base Directory spec: relative
paths are invalid), and a folder under a home that does not exist, under a file, or in a folder
that cannot be written keeps no cache.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import tempfile
import time
import zlib
from functools import lru_cache
from pathlib import Path

import numpy as np

FORMAT = "mok-route-cache/1"
CHOICE_FORMAT = "mok-route-choice/1"   # one line of JSON: the key and the draw a rule chose
ANSWER_FORMAT = "mok-knob-answer/1"    # one line of JSON: the key and a layer's knob answer
# routings of fewer routes (EP x tokens x top-k) are counted faster than an entry is read
MIN_ROUTES = 2 ** 15
MAX_ENTRIES = 4096  # about 40 MB at EP 16
_OFF = ("0", "off", "false", "no")
_ON = ("1", "on", "true", "yes")
_WORKLOAD = Path(__file__).with_name("workload.py")


def cache_dir() -> Path | None:
    """The cache's folder, or None where MOK_ROUTE_CACHE turns it off or the default folder
    cannot be used (default_dir; its warning given once a process)."""
    if os.environ.get("MOK_ROUTE_CACHE", "1").strip().lower() in _OFF:
        return None
    where = os.environ.get("MOK_ROUTE_CACHE_DIR")
    if where:
        return Path(where)
    folder, note = default_dir(os.environ.get("XDG_CACHE_HOME", ""), os.path.expanduser("~"))
    if note is not None and note not in _warned:
        from .fileio import warn

        _warned.add(note)
        warn(note)
    return folder


_warned: set[str] = set()   # default_dir's warnings given in this process (forked workers too)


@lru_cache(maxsize=8)
def default_dir(xdg: str, home: str) -> tuple[Path | None, str | None]:
    """(the default folder or None, a warning or None) from XDG_CACHE_HOME and the home folder:
    $XDG_CACHE_HOME/mok/routes where it is an absolute path without an unexpanded $VARIABLE
    (else it is ignored, with a warning), ~/.cache/mok/routes where the home folder exists. A
    folder whose nearest existing folder above it is a file or cannot be written keeps no cache
    (None and a warning), as MOK_ROUTE_CACHE_DIR would be refused."""
    ignored = None
    if xdg and (not os.path.isabs(xdg) or re.search(r"\$(\w|\{)", xdg)):
        why = "is not an absolute path" if not os.path.isabs(xdg) else "holds a $VARIABLE"
        ignored = (f"environment variable XDG_CACHE_HOME={xdg!r} {why}: ignored (the XDG Base "
                   f"Directory spec)")
        xdg = ""
    if xdg:
        folder, named = Path(xdg) / "mok" / "routes", f"XDG_CACHE_HOME={xdg!r}"
    elif not (os.path.isabs(home) and os.path.isdir(home)):
        why = "does not exist" if os.path.isabs(home) else "is not an absolute path"
        return None, ((ignored + "; and " if ignored else "") + f"the home folder {home!r} "
                      f"{why}: no route cache (MOK_ROUTE_CACHE_DIR names a folder for it, "
                      f"MOK_ROUTE_CACHE=0 turns it off)")
    else:
        folder, named = Path(home) / ".cache" / "mok" / "routes", f"the home folder {home!r}"
    from .fileio import writable

    try:
        existing = next(q for q in (folder, *folder.parents) if q.exists())
        why = ("is a file, not a folder" if not existing.is_dir() else None
               if writable(existing, os.W_OK | os.X_OK) else "is not writable")
    except OSError as exc:      # a name too long for the file system
        existing, why = folder, f"cannot be used ({exc.strerror or exc})"
    if why is None:
        return folder, (None if ignored is None else f"{ignored}; the route cache is in "
                                                     f"{str(folder)!r}")
    return None, ((ignored + "; and " if ignored else "") + f"the route cache's folder from "
                  f"{named}: {str(existing)!r} {why}: no route cache (MOK_ROUTE_CACHE_DIR names "
                  f"another folder, MOK_ROUTE_CACHE=0 turns it off)")


def check_env() -> None:
    """Refuse, at a tool's start, a MOK_ROUTE_CACHE that is neither on nor off and a
    MOK_ROUTE_CACHE_DIR that is empty, a file, or a folder that cannot be written: the cache
    would silently be on, in the default folder, or never written (cache_dir itself stays
    lenient: a library call never fails for its cache). A default folder that cannot be used is
    said in one warning (default_dir)."""
    from .errors import MokInputError
    from .fileio import _nameable, writable

    switch = os.environ.get("MOK_ROUTE_CACHE")
    if switch is not None and switch.strip().lower() not in _OFF + _ON:
        raise MokInputError(f"environment variable MOK_ROUTE_CACHE={switch!r} must be 0 or 1 "
                            f"(also off / on, false / true, no / yes; unset: on)")
    where = os.environ.get("MOK_ROUTE_CACHE_DIR")
    if switch is not None and switch.strip().lower() in _OFF:
        return
    if where is None:
        cache_dir()     # the default folder: a warning where it cannot be used
        return
    if not where.strip():
        raise MokInputError(f"environment variable MOK_ROUTE_CACHE_DIR={where!r} is blank: name "
                            f"the route cache's folder, or unset it for ~/.cache/mok/routes")
    unexpanded = "'~'" if where.startswith("~") else (
        "a $VARIABLE" if re.search(r"\$(\w|\{)", where) else None)
    if unexpanded:
        raise MokInputError(f"environment variable MOK_ROUTE_CACHE_DIR={where!r} holds "
                            f"{unexpanded}, which no shell expanded (the cache would go to a "
                            f"folder named so here): give the full path")
    _nameable(where, "environment variable MOK_ROUTE_CACHE_DIR:")
    path = Path(where)
    existing = next((q for q in (path, *path.parents) if q.exists()), None)
    if existing is not None and not existing.is_dir():
        raise MokInputError(f"environment variable MOK_ROUTE_CACHE_DIR={where!r}: "
                            f"{str(existing)!r} is a file, not a folder")
    if existing is not None and not writable(existing, os.W_OK | os.X_OK):
        raise MokInputError(f"environment variable MOK_ROUTE_CACHE_DIR={where!r}: "
                            f"{str(existing)!r} is not writable (MOK_ROUTE_CACHE=0 turns the "
                            f"cache off)")


@lru_cache(maxsize=1)
def _versions() -> dict:
    """numpy's version, the CPU features its kernels dispatch on, and workload.py's hash."""
    try:
        from numpy._core._multiarray_umath import __cpu_features__ as feats
    except ImportError:  # numpy < 2
        try:
            from numpy.core._multiarray_umath import __cpu_features__ as feats
        except ImportError:
            feats = {}
    cpu = ",".join(sorted(k for k, v in feats.items() if v))
    return {"numpy": np.__version__, "machine": platform.machine(),
            "cpu": hashlib.sha256(cpu.encode()).hexdigest()[:16],
            "code": hashlib.sha256(_WORKLOAD.read_bytes()).hexdigest()[:32]}


def entry_key(spec: str, ep: int, tokens: int, experts: int, top_k: int, seed: int,
              order: str, draw: int | None) -> dict | None:
    """The key of a routing's entry, or None where the cache does not apply: a routing file (its
    contents may change), a zipf order other than the model's (read from a table), fewer than
    MIN_ROUTES routes, inputs of other types, or the cache turned off."""
    if ep * tokens * top_k < MIN_ROUTES:
        return None
    return _key(spec, ep, tokens, experts, top_k, seed, order, draw)


def _key(spec: str, ep: int, tokens: int, experts: int, top_k: int, seed: int, order: str,
         draw: int | None) -> dict | None:
    """entry_key at any number of routes."""
    if not (spec == "uniform" or spec.startswith(("zipf:", "hot:"))) or order != "model":
        return None
    if not all(type(v) is int for v in (ep, tokens, experts, top_k, seed)) or not (
            draw is None or type(draw) is int):
        return None
    if cache_dir() is None:
        return None
    try:
        versions = _versions()
    except OSError:  # workload.py unreadable: no version, no cache
        return None
    return {"routing": spec, "ep": ep, "tokens": tokens, "experts": experts, "top_k": top_k,
            "seed": seed, "order": order, "draw": draw, **versions}


def choice_key(spec: str, ep: int, tokens: int, experts: int, top_k: int, seed: int,
               order: str, rule: dict) -> dict | None:
    """The key of a representative-draw choice (workload._median_draw: which of several token
    draws a rule picks), or None where the cache does not apply. Unlike a routing's entry it
    applies at any number of routes: the choice draws every candidate, which costs more than
    one read however small the routing."""
    key = _key(spec, ep, tokens, experts, top_k, seed, order, None)
    return None if key is None else {**key, "choice": dict(rule)}


def _read_line(key: dict, fmt: str) -> dict | None:
    """A one-line JSON entry of format `fmt` whose key is `key` (marked recently used), or None
    where there is none or it cannot be read."""
    path = _path(key)
    if path is None:
        return None
    try:
        doc = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get("format") != fmt or doc.get("key") != key:
        return None
    try:
        os.utime(path)
    except OSError:
        pass
    return doc


def load_choice(key: dict, candidates: int) -> int | None:
    """The draw index a choice entry holds (0 <= index < candidates), or None where there is no
    sound entry."""
    value = (_read_line(key, CHOICE_FORMAT) or {}).get("draw")
    return value if type(value) is int and 0 <= value < candidates else None


def store_choice(key: dict, draw: int) -> None:
    """Write a choice entry (a temporary file beside it, renamed); a cache that cannot be
    written is left alone."""
    _write(key, json.dumps({"format": CHOICE_FORMAT, "key": key, "draw": int(draw)}).encode())


def answer_key(question: dict, files: tuple[Path, ...]) -> dict | None:
    """The key of a knob answer entry: `question` (JSON values), the hash of `files` (the code,
    presets and parameters the answer is computed from; read once a process), Python's and
    numpy's versions and the CPU; None where the cache is off or a file cannot be read."""
    if cache_dir() is None:
        return None
    try:
        json.dumps(question, allow_nan=False)
    except (TypeError, ValueError):     # a value JSON does not hold: not kept
        return None
    try:
        digest = _files_digest(tuple(sorted(str(f) for f in files)))
        versions = _versions()
    except OSError:
        return None
    return {"question": question, "files": digest, "python": platform.python_version(),
            **{k: versions[k] for k in ("numpy", "machine", "cpu")}}


@lru_cache(maxsize=16)
def _files_digest(paths: tuple[str, ...]) -> str:
    """SHA-256 of the files' names and bytes (read once a process)."""
    h = hashlib.sha256()
    for p in paths:
        data = Path(p).read_bytes()
        h.update(f"{p}\0{len(data)}\0".encode() + data)
    return h.hexdigest()[:40]


def load_answer(key: dict) -> dict | None:
    """The answer a knob answer entry holds (a JSON object), or None where there is no sound
    entry; the caller checks the answer's fields."""
    value = (_read_line(key, ANSWER_FORMAT) or {}).get("answer")
    return value if isinstance(value, dict) else None


def store_answer(key: dict, answer: dict) -> None:
    """Write a knob answer entry; a cache that cannot be written is left alone."""
    _write(key, json.dumps({"format": ANSWER_FORMAT, "key": key, "answer": answer}).encode())


def _path(key: dict) -> Path | None:
    where = cache_dir()
    if where is None:
        return None
    name = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:40]
    return where / f"{name}.route"


def load(key: dict) -> tuple[np.ndarray, np.ndarray] | None:
    """(rows (P, P, L), dedup_rows (P, P)) of `key`'s entry, int64, or None where there is no
    sound entry (missing, unreadable, another key, a bad checksum, counts that do not add up)."""
    path = _path(key)
    if path is None:
        return None
    try:
        data = path.read_bytes()
    except OSError:
        return None
    head, _, packed = data.partition(b"\n")
    try:
        header = json.loads(head)
        body = zlib.decompress(packed)
    except (ValueError, zlib.error):
        return None
    if not isinstance(header, dict) or header.get("format") != FORMAT or header.get("key") != key:
        return None
    ep, tokens, top_k = key["ep"], key["tokens"], key["top_k"]
    local = -(-key["experts"] // ep)
    n_rows = ep * ep * local
    if len(body) != 8 * (n_rows + ep * ep) or hashlib.sha256(body).hexdigest() != header.get("sha256"):
        return None
    flat = np.frombuffer(body, dtype="<i8").astype(np.int64)  # a writable native copy
    rows, dedup = flat[:n_rows].reshape(ep, ep, local), flat[n_rows:].reshape(ep, ep)
    # every route counted once; a token reaches between one and top_k GPUs, each at most once
    per_source = dedup.sum(axis=1)
    if (flat.min() < 0 or int(rows.sum()) != ep * tokens * top_k
            or (dedup > rows.sum(axis=2)).any() or (per_source < tokens).any()
            or (per_source > tokens * top_k).any()):
        return None
    try:
        os.utime(path)  # recently used: the last to be pruned
    except OSError:
        pass
    return rows, dedup


def store(key: dict, rows: np.ndarray, dedup: np.ndarray) -> None:
    """Write `key`'s entry (a temporary file beside it, renamed); a cache that cannot be written
    is left alone."""
    path = _path(key)
    if path is None:
        return
    body = rows.astype("<i8").tobytes() + dedup.astype("<i8").tobytes()
    head = json.dumps({"format": FORMAT, "key": key, "sha256": hashlib.sha256(body).hexdigest()})
    _write(key, head.encode() + b"\n" + zlib.compress(body, 1))


def _write(key: dict, data: bytes) -> None:
    """`data` as `key`'s file: a temporary file beside it, renamed; pruned now and then."""
    path = _path(key)
    if path is None:
        return
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".", suffix=".part")
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except OSError:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        return
    if path.name.startswith("0"):  # hex names: one write in 16 counts the entries
        prune(path.parent)


def prune(where: Path, keep: int = MAX_ENTRIES) -> None:
    """Past `keep` entries in `where`, remove the least recently used down to three quarters;
    and temporary files an hour old (a writer that died)."""
    try:
        now = time.time()
        entries, stale = [], []
        for e in os.scandir(where):
            if e.name.endswith(".route"):
                entries.append((e.stat().st_mtime, e.path))
            elif e.name.endswith(".part") and now - e.stat().st_mtime > 3600:
                stale.append(e.path)
    except OSError:
        return
    if len(entries) > keep:
        stale += [path for _, path in sorted(entries)[:len(entries) - keep * 3 // 4]]
    for path in stale:
        try:
            os.unlink(path)
        except OSError:  # another process removed or replaced it
            pass
