"""The route-statistics cache across processes (mok_model/route_cache.py): an entry gives the
counts the draw gives, a bad entry is ignored and rewritten, and MOK_ROUTE_CACHE=0 reads and
writes nothing."""

import hashlib
import json
import os
import subprocess
import sys
import time
import zlib
from pathlib import Path

import numpy as np
import pytest

from mok_model import route_cache, workload

REPO = Path(__file__).resolve().parents[1]
# (routing, ep, tokens, experts, top_k, seed): at least MIN_ROUTES routes each; an EP that does
# not divide the experts (one slot left empty on some GPUs) among them
CASES = [("uniform", 16, 512, 384, 8, 0), ("zipf:1.2", 8, 1024, 256, 8, 3),
         ("hot:0.1", 6, 800, 128, 8, 7), ("zipf:3", 4, 2048, 128, 8, 1),
         ("uniform", 12, 700, 160, 6, 2)]


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("MOK_ROUTE_CACHE_DIR", str(tmp_path / "routes"))
    monkeypatch.delenv("MOK_ROUTE_CACHE", raising=False)
    workload._cached_traffic.cache_clear()
    yield tmp_path / "routes"
    workload._cached_traffic.cache_clear()


def drawn(spec, ep, tokens, experts, top_k, seed, draw=None):
    """The traffic drawn and counted, no cache involved."""
    ids = workload.make_routing(spec, ep, tokens, experts, top_k, seed, draw=draw)
    return workload.traffic_from_routing(ids, ep, tokens, experts)


def same(a, b):
    for x, y in ((a.rows, b.rows), (a.dedup_rows, b.dedup_rows)):
        assert x.dtype == y.dtype == np.int64 and x.shape == y.shape and np.array_equal(x, y)


def asked(*case, draw=None):
    """The traffic as the model asks for it, a new process's first question (no memory cache)."""
    workload._cached_traffic.cache_clear()
    return workload._cached_traffic(*case, "model", draw)


@pytest.mark.parametrize("case", CASES)
def test_an_entry_gives_the_drawn_counts(cache, case):
    want = drawn(*case)
    same(asked(*case), want)  # a miss: drawn, counted, written
    assert len(list(cache.glob("*.route"))) == 1
    hit = asked(*case)
    same(hit, want)
    assert hit.rows.flags.writeable and hit.dedup_rows.flags.writeable
    same(asked(*case, draw=2), drawn(*case, draw=2))  # another draw, another entry
    assert len(list(cache.glob("*.route"))) == 2


def test_small_routings_and_files_are_not_cached(cache, tmp_path):
    asked("uniform", 4, 64, 128, 8, 0)  # 2,048 routes: faster counted than read
    ids = workload.make_routing("uniform", 4, 1024, 128, 8, 0)
    path = tmp_path / "ids.npy"
    np.save(path, ids)
    same(asked(str(path), 4, 1024, 128, 8, 0), drawn("uniform", 4, 1024, 128, 8, 0))
    assert not cache.exists() or not list(cache.glob("*.route"))


def entry(cache) -> Path:
    (path,) = cache.glob("*.route")
    return path


def corrupt_ways(data: bytes):
    head, _, packed = data.partition(b"\n")
    header = json.loads(head)
    body = zlib.decompress(packed)
    yield "truncated", data[:len(data) // 2]
    yield "empty", b""
    yield "a flipped byte", data[:-3] + bytes([data[-3] ^ 1]) + data[-2:]
    yield "no header", packed
    yield "garbage header", b"{not json\n" + packed
    yield "not compressed", head + b"\n" + body
    yield "another format", json.dumps({**header, "format": "mok-route-cache/0"}).encode() + b"\n" + packed
    other = {**header, "key": {**header["key"], "seed": header["key"]["seed"] + 1}}
    yield "another key", json.dumps(other).encode() + b"\n" + packed
    # a sound checksum over counts that do not add up (one route too many)
    flat = np.frombuffer(body, dtype="<i8").copy()
    flat[0] += 1
    bad = flat.tobytes()
    yield "counts that do not conserve the routes", json.dumps(
        {**header, "sha256": hashlib.sha256(bad).hexdigest()}).encode() + b"\n" + zlib.compress(bad)


def test_a_bad_entry_is_ignored_and_rewritten(cache):
    case = CASES[1]
    want = drawn(*case)
    asked(*case)
    path = entry(cache)
    good = path.read_bytes()
    for why, data in corrupt_ways(good):
        path.write_bytes(data)
        same(asked(*case), want)
        assert path.read_bytes() == good, why  # the miss wrote the entry again
    path.unlink()
    path.mkdir()  # not even a file: read fails, write fails, the answer stands
    same(asked(*case), want)


def test_another_code_or_numpy_version_reads_another_entry(cache, monkeypatch):
    case = CASES[0]
    asked(*case)
    first = entry(cache)
    versions = route_cache._versions()
    for field in ("code", "numpy", "cpu"):
        with monkeypatch.context() as m:
            m.setattr(route_cache, "_versions", lambda f=field: {**versions, f: "other"})
            same(asked(*case), drawn(*case))
    assert len(list(cache.glob("*.route"))) == 4 and first.exists()


@pytest.mark.parametrize("off", ["0", "off", "False", "no"])
def test_turned_off_reads_and_writes_nothing(cache, monkeypatch, off):
    case = CASES[0]
    asked(*case)
    path = entry(cache)
    path.write_bytes(b"")  # a miss if it were read
    monkeypatch.setenv("MOK_ROUTE_CACHE", off)
    assert route_cache.cache_dir() is None
    path.unlink()
    same(asked(*case), drawn(*case))
    assert not list(cache.glob("*"))


def test_an_unwritable_cache_still_answers(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("MOK_ROUTE_CACHE_DIR", str(blocker / "routes"))
    case = CASES[2]
    same(asked(*case), drawn(*case))
    workload._cached_traffic.cache_clear()


def test_a_fresh_process_reads_the_entry_another_wrote(cache):
    """Two processes, one cache: the second reads the entries (its draw function is gone) and
    chooses the same knobs; with the cache off it must draw again. The layer's robust question
    draws one entry per routing it judges (tuner.ROBUST_ROUTINGS)."""
    from mok_model.tuner import ROBUST_ROUTINGS

    ask = ("import json, sys; from mok_kernels import knobs; from mok_model import workload; "
           "workload.make_routing = None if sys.argv[2] == 'no-draw' else workload.make_routing; "
           "c = knobs.tuned_choice('h200-1', json.loads(sys.argv[1]), 16, 2048); "
           "print(json.dumps([c.knobs, repr(c.predicted_ms), c.list_lag]))")
    shape = json.dumps({"hidden": 7168, "expert_width": 2048, "routed_experts": 384, "top_k": 8,
                        "shared_width": 2048})

    def run(mode, **env):
        out = subprocess.run([sys.executable, "-c", ask, shape, mode], cwd=REPO, text=True,
                             capture_output=True, env={"MOK_ROUTE_CACHE_DIR": str(cache),
                                                       "PYTHONPATH": str(REPO), **env})
        return out.returncode, out.stdout.strip()

    rc, first = run("draw")
    assert rc == 0 and len(list(cache.glob("*.route"))) == len(ROBUST_ROUTINGS)
    assert run("no-draw") == (0, first)
    assert run("no-draw", MOK_ROUTE_CACHE="0")[0] != 0


def test_prune_keeps_the_recently_used(tmp_path):
    now = time.time()
    for i in range(10):
        f = tmp_path / f"{i:02d}.route"
        f.write_bytes(b"x")
        os.utime(f, (now - 100 + i, now - 100 + i))  # 00 the least recently used
    old_part, new_part = tmp_path / ".a.part", tmp_path / ".b.part"
    for f, age in ((old_part, 7200), (new_part, 10)):
        f.write_bytes(b"x")
        os.utime(f, (now - age, now - age))
    route_cache.prune(tmp_path, keep=10)
    assert len(list(tmp_path.glob("*.route"))) == 10 and not old_part.exists() and new_part.exists()
    route_cache.prune(tmp_path, keep=8)  # over: down to 6, the newest
    assert sorted(f.name for f in tmp_path.glob("*.route")) == [f"{i:02d}.route" for i in range(4, 10)]


def test_a_hit_marks_the_entry_used(cache):
    case = CASES[0]
    asked(*case)
    path = entry(cache)
    os.utime(path, (1e9, 1e9))
    asked(*case)
    assert path.stat().st_mtime > 1e9 + 1


def median_uncached(*case, gpu=0, tile=128, draws=16):
    """workload._median_draw with no cache involved."""
    workload._median_draw.cache_clear()
    os.environ["MOK_ROUTE_CACHE"] = "0"
    try:
        return workload._median_draw(*case, "model", gpu, tile, draws)
    finally:
        del os.environ["MOK_ROUTE_CACHE"]
        workload._median_draw.cache_clear()


@pytest.mark.parametrize("case,gpu,tile", [(("zipf:1.2", 16, 64, 384, 8, 0), 0, 128),
                                           (("uniform", 8, 16, 8, 2, 3), 0, 128),
                                           (("hot:0.1", 8, 32, 160, 6, 1), None, None)])
def test_a_draw_choice_is_kept_and_read_back(cache, case, gpu, tile):
    """The representative draw a rule picks (workload._median_draw: candidates drawn and
    ranked) is written once, at any number of routes, and read back as the same draw; a bad
    entry or one of another rule is ignored and rewritten."""
    want = median_uncached(*case, gpu=gpu, tile=tile)
    workload._median_draw.cache_clear()
    assert workload._median_draw(*case, "model", gpu, tile, 16) == want
    files = list(cache.glob("*.route"))
    assert len(files) == 1 and json.loads(files[0].read_bytes())["draw"] == want
    key = route_cache.choice_key(*case, "model", {"median_of": 16, "gpu": gpu, "tile": tile})
    assert route_cache.load_choice(key, 16) == want
    assert route_cache.load_choice(key, want) is None               # out of range: refused
    other = route_cache.choice_key(*case, "model", {"median_of": 8, "gpu": gpu, "tile": tile})
    assert route_cache.load_choice(other, 16) is None               # another rule's: none
    for bad in (b"", b"{", json.dumps({"format": route_cache.CHOICE_FORMAT, "key": key,
                                       "draw": "3"}).encode()):
        files[0].write_bytes(bad)
        workload._median_draw.cache_clear()
        assert workload._median_draw(*case, "model", gpu, tile, 16) == want
        assert json.loads(files[0].read_bytes())["draw"] == want    # rewritten


def test_a_draw_choice_is_not_kept_with_the_cache_off(cache, monkeypatch):
    monkeypatch.setenv("MOK_ROUTE_CACHE", "0")
    workload._median_draw.cache_clear()
    workload._median_draw("zipf:1.2", 16, 64, 384, 8, 0, "model", 0, 128, 16)
    workload._median_draw.cache_clear()
    assert not cache.exists() or not list(cache.glob("*.route"))
