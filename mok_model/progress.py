"""Progress bars on stderr (tqdm) for jobs that may run for more than ~2 s; never on stdout.

A bar appears only after DELAY_S seconds, so quick runs print nothing. MOK_PROGRESS=0 turns
every bar off.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from typing import Iterable, Iterator, TypeVar

DELAY_S = 2.0
T = TypeVar("T")
# the switches the tools read from the environment, and their values when unset
ENV_SWITCHES = {"MOK_PROGRESS": "1", "MOK_DEBUG": "0"}


def env_switch(name: str) -> bool:
    """A 0 / 1 switch of ENV_SWITCHES (unset or empty: its default); any other value is bad
    input (MOK_PROGRESS=off would otherwise leave the bars on without a word)."""
    from .errors import MokInputError

    text = os.environ.get(name, "").strip() or ENV_SWITCHES[name]
    if text not in ("0", "1"):
        raise MokInputError(f"environment variable {name}={os.environ[name]!r} must be 0 or 1 "
                            f"(unset: {ENV_SWITCHES[name]})")
    return text == "1"


def check_env() -> None:
    """Refuse a malformed switch at a tool's start, before any work (the route cache's
    variables too: mok_model.route_cache.check_env)."""
    from .route_cache import check_env as route_cache_env

    for name in ENV_SWITCHES:
        env_switch(name)
    route_cache_env()


def debug() -> bool:
    """MOK_DEBUG=1: an internal error shows its traceback (never raises: used in error paths)."""
    return os.environ.get("MOK_DEBUG", "").strip() == "1"


def enabled() -> bool:
    return env_switch("MOK_PROGRESS")


def bar(items: Iterable[T], desc: str, total: int | None = None) -> Iterator[T]:
    """Iterate with a bar of counted steps (shown after DELAY_S)."""
    from tqdm import tqdm

    from .fileio import flush_warnings

    flush_warnings()     # a long job starts: the warnings held back are shown now

    yield from tqdm(items, desc=desc, total=total, file=sys.stderr, delay=DELAY_S,
                    disable=not enabled(), leave=False, dynamic_ncols=True)


@contextlib.contextmanager
def busy(desc: str) -> Iterator[None]:
    """An elapsed-time bar for one job that cannot count its steps (a single simulation). The
    warnings held back are shown once the job has run DELAY_S (a long job: they should not wait
    for its end); a job that stops sooner on input only it finds bad (a simulation's minibatch
    count, a degraded link's target) leaves its error line alone."""
    from .fileio import flush_warnings

    bar_ = None
    if enabled():
        from tqdm import tqdm

        bar_ = tqdm(desc=desc, file=sys.stderr, delay=DELAY_S, leave=False, dynamic_ncols=True,
                    bar_format="{desc}: {elapsed} elapsed")
    done = threading.Event()

    def tick() -> None:
        if done.wait(DELAY_S):
            return
        flush_warnings()
        while bar_ is not None and not done.wait(0.5):
            bar_.update(1)  # tqdm shows the bar once DELAY_S has passed

    t = threading.Thread(target=tick, daemon=True)
    t.start()
    try:
        yield
    finally:
        done.set()
        t.join()
        if bar_ is not None:
            bar_.close()
