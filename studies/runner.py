"""Run a study's grid points in parallel: local processes by default, or an existing Dask cluster.

Results come back in the order of the points whatever order they finish in, so a study's outputs
depend only on its grid and seed. Dask was chosen for clusters because it is pure Python and
light, and its futures API (submit/map/gather) mirrors concurrent.futures.
"""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any, Callable, Sequence

from tqdm import tqdm

from mok_model.errors import MokInputError

from .common import Options


def default_workers() -> int:
    return max(1, os.cpu_count() or 1)


def sweep(fn: Callable[[Any], Any], points: Sequence[Any], opts: Options, desc: str = "") -> list:
    """fn(point) for every point, in point order. fn must be a module-level function (picklable).

    One worker (or one point) runs in this process; otherwise a process pool of opts.workers (0 =
    one per core), or the Dask cluster at opts.cluster. A tqdm bar shows progress on stderr."""
    points = list(points)
    bar = tqdm(total=len(points), desc=desc, disable=not opts.progress or len(points) < 2, delay=2.0,
               leave=False, dynamic_ncols=True)
    try:
        if opts.cluster:
            return _dask(fn, points, opts.cluster, bar)
        workers = opts.workers or default_workers()
        if workers <= 1 or len(points) <= 1:
            out = []
            for p in points:
                out.append(fn(p))
                bar.update()
            return out
        return _processes(fn, points, min(workers, len(points)), bar)
    finally:
        bar.close()


def _processes(fn, points, workers: int, bar) -> list:
    results: list = [None] * len(points)
    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures = {pool.submit(fn, p): i for i, p in enumerate(points)}
        for fut in as_completed(futures):
            results[futures[fut]] = fut.result()
            bar.update()
    return results


def check_cluster(address: str) -> None:
    """Refuse a --cluster address before any work: not [tcp://]HOST:PORT, no dask installed, or
    nothing listening there (in that order: the address's form is the user's to fix first)."""
    _address(address)
    try:
        import dask.distributed  # noqa: F401
    except ImportError:  # dask is a declared dependency (the cluster extra)
        raise MokInputError(f"--cluster {address!r} needs dask[distributed] installed (pip "
                            f"install dask[distributed]); leave --cluster out to run in local "
                            f"processes") from None
    _reachable(address)


def _dask(fn, points, address: str, bar) -> list:
    check_cluster(address)
    from dask.distributed import Client

    try:
        client = Client(address, timeout="10s", set_as_default=False)
    except (OSError, TimeoutError, ValueError) as exc:
        raise MokInputError(f"--cluster {address!r}: cannot reach a Dask scheduler there ({exc})") from None
    try:
        futures = client.map(fn, points, pure=False)
        results = []
        for fut in futures:  # in point order; the cluster runs them all meanwhile
            results.append(fut.result())
            bar.update()
        return results
    finally:
        client.close()


def _address(address: str) -> tuple[str, int]:
    """(host, port) of a [tcp://]HOST:PORT address, or refuse it."""
    from urllib.parse import urlsplit

    parts = urlsplit(address if "://" in address else "tcp://" + address)
    try:
        host, port = parts.hostname, parts.port
    except ValueError:
        host = port = None
    if parts.scheme != "tcp" or not host or not port or " " in address:
        raise MokInputError(f"--cluster {address!r}: a Dask scheduler address such as "
                            f"tcp://HOST:8786 is required")
    return host, port


def _reachable(address: str) -> None:
    """Refuse an address where nothing listens, before Dask's client is built (one that cannot
    connect hangs for its timeout, then fails again when it is collected)."""
    import socket

    host, port = _address(address)
    try:
        socket.create_connection((host, port), timeout=5).close()
    except OSError as exc:
        raise MokInputError(f"--cluster {address!r}: cannot reach a Dask scheduler there "
                            f"({exc})") from None
