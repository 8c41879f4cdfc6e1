"""Where the simulator and the analytic model disagree: a table per effect (docs/sim-study.md).

    .venv/bin/python -m mok_model.sim.study [--quick]

Every row simulates one pass and evaluates the analytic model on the same workload, knobs and
parameters (the shipped gb300-nvl72 defaults), and prints both with their relative difference.
"""

from __future__ import annotations

import time

from ..cli import doc_parser, run_tool
from ..params import load_params
from ..predict import analytic_baseline, analytic_mok
from ..presets import load_hardware, load_model
from ..scenario import Config, Scenario
from . import simulate

HW = "gb300-nvl72"


def _row(label: str, scn: Scenario, cfg: Config | None, system: str = "mok", hw_params: str = HW,
         **kw) -> str:
    p = load_params(None, hw_params)
    s = simulate(scn, cfg, system, p, **kw)
    a = analytic_mok(scn, cfg, p) if system == "mok" else analytic_baseline(scn, system, p)
    d = (s.latency_ms - a.latency_ms) / a.latency_ms
    sb, ab = s.breakdown_ms, a.breakdown_ms
    keys = ("pipeline_fill", "steady_state", "pipeline_drain", "load_imbalance")
    parts = " / ".join(f"{sb.get(k, 0):.3f}" for k in keys)
    aparts = " / ".join(f"{ab.get(k, 0):.3f}" for k in keys)
    return (f"| {label} | {s.latency_ms:.3f} | {a.latency_ms:.3f} | {d:+.1%} | {parts} | {aparts} |"
            if system == "mok" else f"| {label} | {s.latency_ms:.3f} | {a.latency_ms:.3f} | {d:+.1%} | | |")


def main(argv: list[str] | None = None) -> int:
    ap = doc_parser("python -m mok_model.sim.study", __doc__)
    ap.add_argument("--quick", action="store_true", help="fewer rows")
    return run_tool(ap, _tables, argv)


def _tables(a) -> int:
    """Print every table (module docstring)."""
    t0 = time.perf_counter()
    hw = load_hardware(HW)
    kimi = load_model("kimi-k2")
    base = Scenario(hw, kimi, 16, 4096)
    head = ("| case | sim ms | analytic ms | sim vs analytic | sim fill / steady / drain / imbalance "
            "| analytic fill / steady / drain / imbalance |\n|---|---|---|---|---|---|")
    one = 1 << 22
    print(f"GB300 NVL72, kimi-k2 (384 experts), EP 16, 4096 tokens/GPU unless noted; params {HW} defaults\n")
    print("### A. minibatch size (pull/push, 40 comm SMs, ring = all rows)\n" + head)
    for mb in ((4096, one) if a.quick else (1024, 2048, 4096, 8192, 16384, one)):
        print(_row(f"minibatch {mb if mb != one else 'all rows (1 step)'}", base,
                   Config(minibatch=mb, macrobatch=max(2 * mb, 1 << 17))))
    print("\n### B. comm SMs (minibatch 4096)\n" + head)
    for c in ((4, 40) if a.quick else (4, 8, 16, 24, 40, 64)):
        print(_row(f"comm SMs {c}", base, Config(minibatch=4096, comm_sms=c)))
    print("\n### C. routing skew (minibatch 4096, capacity 1.0)\n" + head)
    for r in (("uniform", "hot:0.1") if a.quick else ("uniform", "zipf:0.8", "zipf:1.2", "hot:0.05", "hot:0.1")):
        print(_row(f"routing {r}", base.with_(routing=r), Config(minibatch=4096, capacity=1.0)))
    print("\n### D. dispatch push vs pull across EP (kimi-k2 with 4 experts per GPU, 2048 tokens)\n" + head)
    for ep in ((8, 64) if a.quick else (8, 16, 32, 64)):
        s = Scenario(hw, kimi.with_(routed_experts=4 * ep), ep, 2048)
        for mode in ("pull", "push"):
            print(_row(f"EP {ep} dispatch {mode}", s, Config(dispatch=mode, minibatch=4096)))
    print("\n### E. schedule and ring buffer (minibatch 4096)\n" + head)
    rows = 4096 * kimi.top_k
    for label, cfg, kw in (("published, ring = 2 x rows", Config(minibatch=4096, macrobatch=2 * rows), {}),
                           ("published, ring = rows / 2", Config(minibatch=4096, macrobatch=rows // 2), {}),
                           ("published, ring = rows / 4", Config(minibatch=4096, macrobatch=rows // 4), {}),
                           ("naive in-order, ring = 2 x rows", Config(minibatch=4096, macrobatch=2 * rows),
                            {"schedule": "naive"})):
        print(_row(label, base, cfg, **kw))
    print("\n### F. two scale-up domains (domain of 8 GPUs, 100 GB/s NIC), one step\n" + head)
    for ep in (16,) if a.quick else (16, 32):
        s = Scenario(hw.with_(domain_size=8), kimi.with_(routed_experts=4 * ep), ep, 2048)
        print(_row(f"EP {ep}, {ep // 8} domains", s, Config(minibatch=one, macrobatch=2 * one)))
        print(_row(f"EP {ep}, {ep // 8} domains, minibatch 4096", s, Config(minibatch=4096)))
    print("\n### G. baselines (EP 16, 4096 tokens)\n" + head)
    for system in ("nccl-torch", "deepep", "comet"):
        print(_row(system, base, None, system))
    large_ep(a.quick)
    print(f"\n({time.perf_counter() - t0:.0f} s)")
    return 0


def large_ep(quick: bool = False) -> None:
    """H. Balanced routing past one NVL72 (the network model's tiers and rails), default knobs
    but one fixed minibatch of 4096 rows, kimi-k2 with 2 experts per GPU, 2048 tokens/GPU."""
    head = ("| case | sim ms | analytic ms | sim vs analytic | sim fill / steady / drain / imbalance "
            "| analytic fill / steady / drain / imbalance |\n|---|---|---|---|---|---|")
    print("\n### H. past one NVL72: tiers and rails (kimi-k2, 2 experts per GPU, 2048 tokens, "
          "minibatch 4096)\n" + head)
    kimi = load_model("kimi-k2")
    gb = load_hardware(HW)
    u = load_hardware("rubin-ultra-nvl576")
    cases = [("GB300 NVL72, EP 72", gb, 72, HW), ("GB300, 2 racks on rails, EP 144", gb, 144, HW),
             ("Rubin Ultra NVL576, EP 144 (one leaf)", u, 144, u.name),
             ("Rubin Ultra NVL576, EP 576 (4 leaves, two tiers)", u, 576, u.name),
             ("Rubin Ultra NVL576, EP 576, spine 2:1 oversubscribed", u.with_(tier_oversubscription=2.0), 576, u.name)]
    for label, hw, ep, pn in (cases[:2] if quick else cases):
        s = Scenario(hw, kimi.with_(routed_experts=2 * ep), ep, 2048)
        print(_row(label, s, Config(minibatch=4096), hw_params=pn))


if __name__ == "__main__":
    raise SystemExit(main())
