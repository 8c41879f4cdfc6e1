"""The bench's timing loop (mok_kernels/bench.py time_events) on a fake CUDA clock: warm-up by
count and by GPU time, fresh inputs before every timed iteration."""

import pytest
import torch

from mok_kernels import bench


class FakeClock:
    """torch.cuda's events and synchronize over a step that takes `step_ms` of GPU time."""

    def __init__(self, step_ms: float) -> None:
        self.step_ms, self.now, self.steps, self.refreshed = step_ms, 0.0, 0, []
        clock = self

        class Event:
            def __init__(self, enable_timing: bool = False) -> None:
                self.at = None

            def record(self) -> None:
                self.at = clock.now

            def synchronize(self) -> None:
                pass

            def elapsed_time(self, end: "Event") -> float:
                return end.at - self.at

        self.Event = Event

    def step(self) -> None:
        self.now += self.step_ms
        self.steps += 1

    def refresh(self, i: int) -> None:
        self.refreshed.append(i)


@pytest.fixture
def clock(monkeypatch):
    def make(step_ms: float) -> FakeClock:
        c = FakeClock(step_ms)
        monkeypatch.setattr(torch.cuda, "Event", c.Event)
        monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
        return c
    return make


@pytest.mark.parametrize("step_ms,warmup,extra", [
    (0.5, 2, 48),       # 1 ms of warm-up by count: 48 more steps reach 25 ms
    (0.3, 2, 82),       # ceil(24.4 / 0.3)
    (20.0, 2, 0),       # 40 ms already
    (0.001, 2, bench.MAX_WARMUP_EXTRA),   # capped
    (0.5, 0, 0),        # no warm-up asked: none
])
def test_warm_up_by_count_then_by_time(clock, step_ms, warmup, extra):
    c = clock(step_ms)
    times = bench.time_events(c.step, c.refresh, 5, warmup)
    assert times == pytest.approx([step_ms] * 5)
    assert c.steps == warmup + extra + 5
    # fresh inputs before each counted warm-up and each timed iteration, none for the extra ones
    assert c.refreshed == [-1 - i for i in range(warmup)] + list(range(5))
