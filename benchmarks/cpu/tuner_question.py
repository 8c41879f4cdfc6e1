"""The tuner's robust knob question on routes already on disk: median ms of REPEAT calls of
knobs.tuned_choice (no answer kept or cached) per workload, one line, and each answer's knobs,
lag and predicted latency's bits on stderr. To compare two versions of the code, run it in both
checkouts, alternately, and compare the answers too (mok_kernels/logs_s49/tuner_ab.txt):

    PYTHONPATH=. python benchmarks/cpu/tuner_question.py 2> answers.txt

The route cache lives in MOK_ROUTE_CACHE_DIR (default: a folder under the system's temporary
folder, shared by both checkouts' runs, never the user's)."""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("MOK_ROUTE_CACHE_DIR", str(Path(tempfile.gettempdir()) / "mok-tuner-question"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench_knobs import forget  # noqa: E402  (this process's answers and route statistics)
from mok_kernels import knobs  # noqa: E402
from mok_model.presets import load_model  # noqa: E402

WORKLOADS = [("kimi-k2", 16, 64), ("kimi-k2", 16, 512), ("kimi-k2", 16, 2048),
             ("kimi-k2", 16, 8192), ("glm-5", 16, 2048), ("qwen3-30b-a3b", 8, 1024)]
REPEAT = 5


def main() -> None:
    out = []
    for model, ep, n in WORKLOADS:
        shape = knobs.shape_of(load_model(model))
        forget()
        knobs.tuned_choice("h200-1", shape, ep, n)      # routes drawn and written once
        times = []
        for _ in range(REPEAT):
            forget()
            t0 = time.perf_counter()
            c = knobs.tuned_choice("h200-1", shape, ep, n)
            times.append((time.perf_counter() - t0) * 1e3)
        out.append(f"{statistics.median(times):.1f}")
        print(f"{model} EP{ep} {n}: {c.knobs} lag {c.list_lag} {c.predicted_ms.hex()}", file=sys.stderr)
    print(" ".join(out))


if __name__ == "__main__":
    main()
