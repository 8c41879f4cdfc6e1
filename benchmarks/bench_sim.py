"""Simulator speed: events per second, wall time and peak memory of one simulated layer pass,
with the network model (max-min fair flows over the preset's topology).

    .venv/bin/python benchmarks/bench_sim.py [--quick]

Goals, default knobs (mok_model.scenario.default_config), 2,048 tokens per GPU:
- GB300 NVL72, EP 72: at most 2 s wall and 1 GiB peak memory (issue 3);
- Rubin Ultra NVL576 (two switch tiers), EP 576: at most 30 s wall (issue 11);
- EP 1024 on a GB300 what-if domain of 1,024 GPUs (the scale-up-domains study's largest point):
  at most 60 s wall (issue 11).
kimi-k2's 384 routed experts do not divide over 72, 576 or 1024 GPUs, so the workloads use
kimi-k2 variants with 432, 1152 and 2048 routed experts (6, 2 and 2 per GPU).
The baseline measured in the same run is the analytic model on the same workload (one call), so
the ratio says what the simulation costs over the closed form. --quick skips EP 1024.
"""

from __future__ import annotations

import resource
import sys
import time
import tracemalloc

from mok_model.cli import doc_parser, run_tool
from mok_model.predict import analytic_mok, resolve_params
from mok_model.presets import load_hardware, load_model
from mok_model.scenario import Scenario, default_config
from mok_model.sim import simulate
from mok_model.workload import traffic

CASES = [  # hardware, domain size override, experts of the kimi-k2 variant, EP, wall goal (s), memory goal (GiB)
    ("gb300-nvl72", None, 432, 72, 2.0, 1.0),
    ("rubin-ultra-nvl576", None, 1152, 576, 30.0, None),
    ("gb300-nvl72", 1024, 2048, 1024, 60.0, None),
]


def main(quick: bool = False) -> int:
    ok = True
    print(f"{'workload':<46}{'events':>9}{'flows':>8}{'solves':>7}{'wall s':>8}{'events/s':>10}"
          f"{'peak MiB':>9}{'analytic s':>11}{'ratio':>8}  goal")
    for hw_name, domain, experts, ep, wall_goal, mem_goal in CASES:
        if quick and ep > 576:
            continue
        hw = load_hardware(hw_name)
        if domain:
            hw = hw.with_(domain_size=domain)
        scn = Scenario(hw, load_model("kimi-k2").with_(routed_experts=experts), ep, 2048)
        p = resolve_params(scn, None, allow_other_hardware=True)
        cfg = default_config(scn)
        traffic(scn)  # routing is drawn once per workload and cached; not simulator time
        t0 = time.perf_counter()
        ana = analytic_mok(scn, cfg, p)
        t_ana = time.perf_counter() - t0
        t0 = time.perf_counter()
        pred = simulate(scn, cfg, "mok", p)
        wall = time.perf_counter() - t0
        peak = None
        if mem_goal:  # a second run under tracemalloc (slower) measures Python's peak
            tracemalloc.start()
            simulate(scn, cfg, "mok", p)
            peak = tracemalloc.get_traced_memory()[1] / 2 ** 20
            tracemalloc.stop()
        n, fab = pred.extra["events"], pred.extra["fabric"]
        met = wall <= wall_goal and (mem_goal is None or peak <= mem_goal * 1024)
        ok &= met
        goal = f"<= {wall_goal:g} s" + (f", <= {mem_goal:g} GiB" if mem_goal else "")
        name = f"{hw.name}{f'~d{domain}' if domain else ''}/kimi-k2({experts})/EP{ep}"
        pk = f"{peak:>9.0f}" if peak is not None else f"{'-':>9}"
        print(f"{name:<46}{n:>9}{fab['flows']:>8}{fab['rate_solves']:>7}{wall:>8.2f}{n / wall:>10.0f}{pk}"
              f"{t_ana:>11.4f}{wall / t_ana:>7.0f}x  {goal}: {'met' if met else 'NOT met'}")
        print(f"    latency sim {pred.latency_ms:.3f} ms, analytic {ana.latency_ms:.3f} ms "
              f"({(pred.latency_ms - ana.latency_ms) / ana.latency_ms:+.1%}); minibatches "
              f"{pred.extra['minibatches']}, peer groups {pred.extra['peer_groups']}, links "
              f"{fab['links']} ({', '.join(fab['link_kinds'])}), merge {fab['merge_us']:.2f} us, "
              f"params {p.path}")
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"process max RSS {rss:.0f} MiB (includes numpy, simpy, networkx and the routing)")
    return 0 if ok else 1


if __name__ == "__main__":
    parser = doc_parser("benchmarks/bench_sim.py", __doc__)
    parser.add_argument("--quick", action="store_true", help="skip EP 1024")
    sys.exit(run_tool(parser, lambda a: main(a.quick)))
