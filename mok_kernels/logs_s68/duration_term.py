"""Session 68: would a phase-duration term fix the GEMM tables' long-phase bias? A diagnostic on
the per-phase lines of gemm_phase_errors.py (phase_duration.py's inputs), no shipped change.

The candidate scales a phase's table time t (ms) by 1 + a * max(0, log2(t / t0)): no change below
t0, a slowdown growing with each doubling above it. a and t0 are fitted per card (grid search,
least squares on log(measured / table)) to some seeds' phases and scored on the others'.

    python mok_kernels/logs_s68/duration_term.py H100.txt H200.txt
"""
import re
import sys

import numpy as np


def rows(path: str) -> list[tuple[str, float, float]]:
    """(seed, measured ms, table ms) of every phase line."""
    out = []
    for line in open(path):
        m = re.search(r"^syn(\d+)\S*.*measured\s+([\d.]+) ms\s+table\s+([\d.]+)", line)
        if m:
            out.append((m[1], float(m[2]), float(m[3])))
    return out


def scaled(table: np.ndarray, a: float, t0: float) -> np.ndarray:
    return table * (1 + a * np.maximum(0.0, np.log2(table / t0)))


def fit(meas: np.ndarray, table: np.ndarray) -> tuple[float, float]:
    best = (np.inf, 0.0, 1.0)
    for t0 in np.geomspace(0.25, 32, 22):
        for a in np.linspace(0, 0.15, 151):
            loss = np.mean(np.log(scaled(table, a, t0) / meas) ** 2)
            best = min(best, (loss, a, t0))
    return best[1], best[2]


def report(name: str, meas: np.ndarray, table: np.ndarray, pred: np.ndarray) -> str:
    def stats(p):
        e = p / meas - 1
        long = meas >= 10
        return (f"MAPE {100 * np.abs(e).mean():4.1f} %, max {100 * np.abs(e).max():4.1f} %, "
                f">= 10 ms signed {100 * e[long].mean() if long.any() else float('nan'):+5.1f} % "
                f"(n {long.sum()}), < 2 ms signed {100 * e[meas < 2].mean():+5.1f} %")
    return f"  {name}: table {stats(table)}\n  {' ' * len(name)}  term  {stats(pred)}"


for path in sys.argv[1:]:
    data = rows(path)
    seeds = sorted({s for s, _, _ in data})
    print(f"{path}: {len(data)} phases, seeds {', '.join(seeds)}")
    for held in seeds:      # leave one seed out: fit on the others, score it
        train = np.array([(m, t) for s, m, t in data if s != held])
        test = np.array([(m, t) for s, m, t in data if s == held])
        a, t0 = fit(train[:, 0], train[:, 1])
        print(f" seed {held} held out (a {a:.3f}, t0 {t0:.2f} ms fitted on the others):")
        print(report("held", test[:, 0], test[:, 1], scaled(test[:, 1], a, t0)))
    every = np.array([(m, t) for _, m, t in data])
    a, t0 = fit(every[:, 0], every[:, 1])
    print(f" all seeds: a {a:.3f}, t0 {t0:.2f} ms")
