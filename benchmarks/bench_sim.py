"""Simulator speed: events per second, wall time and peak memory of one simulated layer pass.

    .venv/bin/python benchmarks/bench_sim.py

Goals (issue 3), default knobs (mok_model.scenario.default_config), 2,048 tokens per GPU:
- GB300 NVL72, EP 72: at most 2 s wall and 1 GiB peak memory.
- Rubin Ultra NVL576, EP 576: at most 30 s wall.
kimi-k2 has 384 routed experts, which do not divide over 72 or 576 GPUs, so the workloads use a
kimi-k2 variant with 432 (EP 72: 6 per GPU) and 1152 (EP 576: 2 per GPU) routed experts.
The baseline measured in the same run is the analytic model on the same workload (one call), so
the ratio says what the simulation costs over the closed form.
"""

from __future__ import annotations

import resource
import sys
import time
import tracemalloc

from mok_model.predict import analytic_mok, resolve_params
from mok_model.presets import load_hardware, load_model
from mok_model.scenario import Scenario, default_config
from mok_model.sim import simulate
from mok_model.workload import traffic

CASES = [  # hardware, experts of the kimi-k2 variant, EP, wall goal (s), memory goal (GiB)
    ("gb300-nvl72", 432, 72, 2.0, 1.0),
    ("rubin-ultra-nvl576", 1152, 576, 30.0, None),
]


def main() -> int:
    ok = True
    print(f"{'workload':<42}{'events':>9}{'wall s':>8}{'events/s':>10}{'peak MiB':>9}"
          f"{'analytic s':>11}{'ratio':>8}  goal")
    for hw_name, experts, ep, wall_goal, mem_goal in CASES:
        hw = load_hardware(hw_name)
        scn = Scenario(hw, load_model("kimi-k2").with_(routed_experts=experts), ep, 2048)
        p = resolve_params(scn, None, allow_other_hardware=True)
        cfg = default_config(scn)
        traffic(scn)  # routing is drawn once per workload and cached; not simulator time
        t0 = time.perf_counter()
        analytic_mok(scn, cfg, p)
        t_ana = time.perf_counter() - t0
        t0 = time.perf_counter()
        pred = simulate(scn, cfg, "mok", p)
        wall = time.perf_counter() - t0
        tracemalloc.start()  # a second run under tracemalloc (slower) measures Python's peak
        simulate(scn, cfg, "mok", p)
        peak = tracemalloc.get_traced_memory()[1] / 2 ** 20
        tracemalloc.stop()
        n = pred.extra["events"]
        met = wall <= wall_goal and (mem_goal is None or peak <= mem_goal * 1024)
        ok &= met
        goal = f"<= {wall_goal:g} s" + (f", <= {mem_goal:g} GiB" if mem_goal else "")
        name = f"{hw_name}/kimi-k2({experts} experts)/EP{ep}"
        print(f"{name:<42}{n:>9}{wall:>8.2f}{n / wall:>10.0f}{peak:>9.0f}{t_ana:>11.4f}"
              f"{wall / t_ana:>7.0f}x  {goal}: {'met' if met else 'NOT met'}")
        print(f"    latency sim {pred.latency_ms:.3f} ms, analytic {analytic_mok(scn, cfg, p).latency_ms:.3f} ms; "
              f"minibatches {pred.extra['minibatches']}, peer groups {pred.extra['peer_groups']}, "
              f"params {p.path}")
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"process max RSS {rss:.0f} MiB (includes numpy, simpy, networkx and the routing)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
