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


def _routing_workload(routing: str, rank: int = 0):
    """What refuse_overflowing_draws reads of a Workload: qwen3-30b-a3b's routing at EP 16, 512
    tokens a rank, on the CPU."""
    from types import SimpleNamespace
    return SimpleNamespace(ep=16, tokens=512, shape=SimpleNamespace(experts=128, topk=8),
                           routing=routing, seed=0, rank=rank, el=8, x=torch.empty(0))


def test_overflowing_routing_draws_are_refused_before_launch():
    """The timing's routing draws (first, warm-up, timed, breakdown) are counted for the rank
    before any launch (session 43: a trapped launch ended the bench's process): onehot sends
    rank 0, which holds expert 0, every token once plus its share of the rest, ~11,800 rows,
    beyond capacity 0.125's 8,192; the same counts fit 0.25's 16,384, and uniform routing fits
    0.125. The count is that of the draws refresh(i) takes (bench.routing_draw)."""
    from mok_kernels.schedule import CapacityOverflowError

    hot = _routing_workload("onehot")
    with pytest.raises(CapacityOverflowError, match=r"routing onehot: up to \d+ routed rows "
                       r"reach rank 0 in this timing's draws, beyond the schedule's 8192"):
        bench.refuse_overflowing_draws(hot, 8192, 0.125, iters=3, warmup=1, breakdown=True)
    bench.refuse_overflowing_draws(hot, 16384, 0.25, iters=3, warmup=1, breakdown=True)
    bench.refuse_overflowing_draws(_routing_workload("uniform"), 8192, 0.125, iters=3, warmup=1)
    most = max(int((bench.routing_draw(hot, i)[0] < 8).sum()) for i in (-1, 0, 1, 2, 100, 101, 102))
    assert 8192 + 3000 < most <= 16384
    with pytest.raises(CapacityOverflowError, match=f"up to {most} routed rows"):
        bench.refuse_overflowing_draws(hot, most - 1, 0.125, iters=3, warmup=1, breakdown=True)
    bench.refuse_overflowing_draws(hot, most, 0.125, iters=3, warmup=1, breakdown=True)
