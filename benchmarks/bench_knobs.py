"""Speed of the launch-time knob choice (mok_kernels/knobs.py): a first question (the tuner),
the same question again (cached) and a knob table, printed as ms and as ratios to the first
question measured in the same run. Goal: under 10 ms per layer construction.

    python benchmarks/bench_knobs.py
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mok_kernels import knobs  # noqa: E402
from mok_model.cli import doc_parser, run_tool  # noqa: E402
from mok_model.presets import load_model  # noqa: E402

WORKLOADS = [("kimi-k2", 16, 64), ("kimi-k2", 16, 2048), ("kimi-k2", 16, 8192),
             ("glm-5", 16, 2048), ("qwen3-30b-a3b", 8, 1024)]


def ms(repeat: int, *args, **kw) -> float:
    """Median ms of `repeat` calls of knobs.choose_knobs(*args, **kw)."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        knobs.choose_knobs(*args, **kw)
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def main() -> None:
    print(f"{'workload':<26}{'first ms':>10}{'cached ms':>11}{'table 1st ms':>14}{'table ms':>10}"
          f"{'cached/first':>14}")
    with tempfile.TemporaryDirectory() as tmp:
        for model, ep, n in WORKLOADS:
            shape = knobs.shape_of(load_model(model))
            knobs._CACHE.clear()
            first = ms(1, "h200-1", shape, ep, n)
            cached = ms(50, "h200-1", shape, ep, n)
            path = Path(tmp) / f"{model}-{ep}-{n}.json"
            knobs.write_table(path, knobs.build_table("h200-1", model, ep, [n]))
            knobs._TABLES.clear()
            table_first = ms(1, "h200-1", shape, ep, n, table=path)
            table = ms(50, "h200-1", shape, ep, n, table=path)
            print(f"{f'{model} EP{ep} {n}':<26}{first:>10.1f}{cached:>11.3f}{table_first:>14.2f}"
                  f"{table:>10.3f}{cached / first:>14.5f}")


if __name__ == "__main__":
    sys.exit(run_tool(doc_parser("benchmarks/bench_knobs.py", __doc__), lambda a: main()))
