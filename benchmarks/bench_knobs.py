"""Speed of the launch-time knob choice (mok_kernels/knobs.py), printed as ms and as ratios to the
first question measured in the same run. Goal: under 10 ms per layer construction.

Warm process (after one question of another shape, WARMUP): a shape's first question (the
layer's default: robust knobs over three routings, tuner.tune_robust) with the route cache
(mok_model/route_cache.py) empty (the routes drawn, counted and written, the tuner run); the same
first question told uniform routing (`uni 1st ms`: what a layer paid before session 44) and the
ratio; the question forgotten in the process with its answer kept on disk (`kept ms`: what a
later process pays, since session 49), with its routes on disk but not its answer (`routes ms`:
the tuner on read routes), the same again cached in the process, and a knob table. Fresh process
(a `python -c` per question, FRESH_RUNS of each): `import mok_kernels.knobs` (what MoKLayer
imports to choose its knobs), then the first question, both timed in the child, with the route
cache empty (first) and with the answer an earlier process kept (kept). The cache lives in a
temporary folder (MOK_ROUTE_CACHE_DIR), never the user's.

    python benchmarks/bench_knobs.py
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mok_kernels import knobs  # noqa: E402
from mok_model import analytic, route_cache, workload  # noqa: E402
from mok_model.cli import doc_parser, run_tool  # noqa: E402
from mok_model.presets import load_model  # noqa: E402

WORKLOADS = [("kimi-k2", 16, 64), ("kimi-k2", 16, 512), ("kimi-k2", 16, 2048), ("kimi-k2", 16, 4096),
             ("kimi-k2", 16, 8192), ("glm-5", 16, 2048), ("qwen3-30b-a3b", 8, 1024)]
WARMUP = ("deepseek-v3", 8, 256)
FRESH_RUNS = 3
# a fresh process: the import, then the first question (the shape as MoKLayer passes it)
CHILD = """import json, sys, time
t0 = time.perf_counter()
from mok_kernels import knobs
t1 = time.perf_counter()
knobs.choose_knobs("h200-1", json.loads(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]))
t2 = time.perf_counter()
print(json.dumps({"import_ms": (t1 - t0) * 1e3, "first_ms": (t2 - t1) * 1e3}))
"""


def ms(repeat: int, *args, **kw) -> float:
    """Median ms of `repeat` calls of knobs.choose_knobs(*args, **kw)."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        knobs.choose_knobs(*args, **kw)
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def fresh(shape: dict, ep: int, tokens: int, cache: Path) -> dict:
    """import_ms and first_ms of one fresh process asking one question, its route cache `cache`."""
    out = subprocess.run([sys.executable, "-c", CHILD, json.dumps(shape), str(ep), str(tokens)],
                         cwd=ROOT, capture_output=True, text=True, check=True,
                         env={**os.environ, "MOK_ROUTE_CACHE_DIR": str(cache)})
    return json.loads(out.stdout)


def drop_answers() -> None:
    """The knob answers kept in the route cache's folder (its routes stay)."""
    for entry in route_cache.cache_dir().glob("*.route"):
        if route_cache.ANSWER_FORMAT.encode() in entry.read_bytes()[:64]:
            entry.unlink()


def forget() -> None:
    """This process's answers and route statistics (the route cache on disk stays)."""
    knobs._CACHE.clear()
    analytic.loads.cache_clear()
    workload._cached_traffic.cache_clear()
    workload._median_draw.cache_clear()


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        os.environ.pop("MOK_ROUTE_CACHE", None)
        caches = Path(tmp) / "routes"
        os.environ["MOK_ROUTE_CACHE_DIR"] = str(caches / "warmup")
        run(Path(tmp), caches)


def run(tmp: Path, caches: Path) -> None:
    knobs.choose_knobs("h200-1", knobs.shape_of(load_model(WARMUP[0])), *WARMUP[1:])
    print(f"warm process (after one question of {WARMUP[0]} EP{WARMUP[1]} {WARMUP[2]}); first: "
          f"route cache empty; kept: the answer on disk; routes: the routes on disk, no answer")
    print(f"{'workload':<26}{'first ms':>10}{'uni 1st ms':>11}{'first/uni':>10}{'kept ms':>9}"
          f"{'routes ms':>10}{'cached ms':>11}{'table 1st ms':>14}{'table ms':>10}{'kept/first':>12}")
    warm = {}
    for model, ep, n in WORKLOADS:
        shape = knobs.shape_of(load_model(model))
        os.environ["MOK_ROUTE_CACHE_DIR"] = str(caches / f"warm-{model}-{ep}-{n}")
        forget()
        first = warm[model, ep, n] = ms(1, "h200-1", shape, ep, n)
        os.environ["MOK_ROUTE_CACHE_DIR"] = str(caches / f"uniform-{model}-{ep}-{n}")
        forget()
        uni = ms(1, "h200-1", shape, ep, n, routing="uniform")
        os.environ["MOK_ROUTE_CACHE_DIR"] = str(caches / f"warm-{model}-{ep}-{n}")
        forget()
        kept = ms(1, "h200-1", shape, ep, n)
        forget()
        drop_answers()
        routes = ms(1, "h200-1", shape, ep, n)
        cached = ms(50, "h200-1", shape, ep, n)
        path = tmp / f"{model}-{ep}-{n}.json"
        knobs.write_table(path, knobs.build_table("h200-1", model, ep, [n]))
        knobs._TABLES.clear()
        table_first = ms(1, "h200-1", shape, ep, n, table=path)
        table = ms(50, "h200-1", shape, ep, n, table=path)
        print(f"{f'{model} EP{ep} {n}':<26}{first:>10.1f}{uni:>11.1f}{first / uni:>10.1f}"
              f"{kept:>9.2f}{routes:>10.1f}{cached:>11.3f}{table_first:>14.2f}{table:>10.3f}"
              f"{kept / first:>12.3f}")
    print(f"\nfresh process (python -c: import mok_kernels.knobs, then the first question), "
          f"median and worst of {FRESH_RUNS}; first: route cache empty, kept: the answer an "
          f"earlier process kept")
    print(f"{'workload':<26}{'import ms':>10}{'first ms':>10}{'worst ms':>10}{'kept ms':>9}"
          f"{'worst ms':>10}{'first/warm':>12}")
    for model, ep, n in WORKLOADS:
        shape = knobs.shape_of(load_model(model))
        runs = [fresh(shape, ep, n, caches / f"fresh-{model}-{ep}-{n}-{i}") for i in range(FRESH_RUNS)]
        kept = [fresh(shape, ep, n, caches / f"fresh-{model}-{ep}-{n}-0") for _ in range(FRESH_RUNS)]
        first = statistics.median(r["first_ms"] for r in runs)
        print(f"{f'{model} EP{ep} {n}':<26}{statistics.median(r['import_ms'] for r in runs):>10.1f}"
              f"{first:>10.1f}{max(r['first_ms'] for r in runs):>10.1f}"
              f"{statistics.median(r['first_ms'] for r in kept):>9.1f}"
              f"{max(r['first_ms'] for r in kept):>10.1f}{first / warm[model, ep, n]:>12.2f}")


if __name__ == "__main__":
    sys.exit(run_tool(doc_parser("benchmarks/bench_knobs.py", __doc__), lambda a: main()))
