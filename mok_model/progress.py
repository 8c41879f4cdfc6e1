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


def enabled() -> bool:
    return os.environ.get("MOK_PROGRESS", "1") != "0"


def bar(items: Iterable[T], desc: str, total: int | None = None) -> Iterator[T]:
    """Iterate with a bar of counted steps (shown after DELAY_S)."""
    from tqdm import tqdm

    yield from tqdm(items, desc=desc, total=total, file=sys.stderr, delay=DELAY_S,
                    disable=not enabled(), leave=False, dynamic_ncols=True)


@contextlib.contextmanager
def busy(desc: str) -> Iterator[None]:
    """An elapsed-time bar for one job that cannot count its steps (a single simulation)."""
    if not enabled():
        yield
        return
    from tqdm import tqdm

    done = threading.Event()
    bar_ = tqdm(desc=desc, file=sys.stderr, delay=DELAY_S, leave=False, dynamic_ncols=True,
                bar_format="{desc}: {elapsed} elapsed")

    def tick() -> None:
        while not done.wait(0.5):
            bar_.update(1)  # tqdm shows the bar once DELAY_S has passed

    t = threading.Thread(target=tick, daemon=True)
    t.start()
    try:
        yield
    finally:
        done.set()
        t.join()
        bar_.close()
