"""Tuner speed: configurations evaluated per second by the vectorized analytic engine.

    .venv/bin/python benchmarks/bench_tuner.py

Goal (issue 2): at least 20,000 configurations per second on the 2-core development machine.
The baseline measured in the same run is one scalar `predict` call per configuration, so the
printed ratio is what vectorization buys.
"""

from __future__ import annotations

import statistics
import sys
import time

from mok_model.cli import doc_parser, run_tool
from mok_model.params import load_params
from mok_model.predict import analytic_mok
from mok_model.presets import load_hardware, load_model
from mok_model.scenario import Scenario
from mok_model.tuner import knob_grid, tune


def main() -> None:
    cases = [("gb300-nvl72", "kimi-k2", 16, 2048), ("gb300-nvl72", "glm-5", 64, 4096),
             ("h200-1", "kimi-k2", 16, 1024)]
    print(f"{'workload':<34}{'configs':>8}{'seconds':>9}{'configs/s':>11}{'scalar/s':>10}{'ratio':>7}")
    rates = []
    for hw, model, ep, tokens in cases:
        scn = Scenario(load_hardware(hw), load_model(model), ep, tokens)
        p = load_params(None, hw)
        tune(scn, p)  # warm-up: routing and traffic are cached per workload
        times = []
        for _ in range(5):
            r = tune(scn, p)
            times.append(r.seconds)
        sec = statistics.median(times)
        rate = r.evaluated / sec
        rates.append(rate)
        # baseline: the same model, one configuration per call
        g = knob_grid(scn)
        cfgs = [tune_cfg for tune_cfg in (s.config for s in tune(scn, p, top=50).top)]
        t0 = time.perf_counter()
        for c in cfgs:
            analytic_mok(scn, c, p)
        scalar = len(cfgs) / (time.perf_counter() - t0)
        print(f"{hw + '/' + model + f'/EP{ep}/{tokens}':<34}{len(g['minibatch']):>8}{sec:>9.3f}"
              f"{rate:>11.0f}{scalar:>10.0f}{rate / scalar:>6.0f}x")
    print(f"slowest: {min(rates):.0f} configurations/s (goal >= 20,000): "
          f"{'met' if min(rates) >= 20000 else 'NOT met'}")


if __name__ == "__main__":
    sys.exit(run_tool(doc_parser("benchmarks/bench_tuner.py", __doc__), lambda a: main()))
