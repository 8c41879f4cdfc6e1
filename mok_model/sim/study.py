"""Where the simulator and the analytic model disagree: a table per effect (docs/sim-study.md).

    .venv/bin/python -m mok_model.sim.study [--quick]
    .venv/bin/python -m mok_model.sim.study --random 400 [--seed 1]

Every row simulates one pass and evaluates the analytic model on the same workload, knobs and
parameters (the shipped gb300-nvl72 defaults unless a table names others), and prints both with
their relative difference. `--random N`: N random valid questions instead (any hardware and
model preset, EP 2-64, 1-8,192 tokens, either pass, BF16 or FP8, three routings, MoK at the
tuner's knobs or a baseline), summarized per system, with the ten largest disagreements.
"""

from __future__ import annotations

import random
import time

import numpy as np

from ..cli import doc_parser, int_at_least, run_tool
from ..errors import MokInputError
from ..params import load_params
from ..predict import analytic_baseline, analytic_mok, predict
from ..presets import hardware_names, load_hardware, load_model, model_names
from ..scenario import MAX_SEED, SYSTEMS, Config, Scenario
from . import simulate

HW = "gb300-nvl72"
# every table's header
HEAD = ("| case | sim ms | analytic ms | sim vs analytic | sim fill / steady / drain / imbalance "
        "| analytic fill / steady / drain / imbalance |\n|---|---|---|---|---|---|")


def _row(label: str, scn: Scenario, cfg: Config | None, system: str = "mok", hw_params: str = HW,
         values: dict | None = None, **kw) -> str:
    """One table row; `values`: design what-ifs applied to the parameters (Params.with_design)."""
    p = load_params(None, hw_params)
    if values:
        p = p.with_design(**values)
    s = simulate(scn, cfg, system, p, **kw)
    a = analytic_mok(scn, cfg, p) if system == "mok" else analytic_baseline(scn, system, p)
    d = (s.latency_ms - a.latency_ms) / a.latency_ms
    sb, ab = s.breakdown_ms, a.breakdown_ms
    keys = ("pipeline_fill", "steady_state", "pipeline_drain", "load_imbalance")
    parts = " / ".join(f"{sb.get(k, 0):.3f}" for k in keys)
    aparts = " / ".join(f"{ab.get(k, 0):.3f}" for k in keys)
    return (f"| {label} | {s.latency_ms:.3f} | {a.latency_ms:.3f} | {d:+.1%} | {parts} | {aparts} |"
            if system == "mok" else f"| {label} | {s.latency_ms:.3f} | {a.latency_ms:.3f} | {d:+.1%} | | |")


# --random's ceiling: each question is simulated (a second or so); more could only be a mistake
MAX_RANDOM = 100_000


def main(argv: list[str] | None = None) -> int:
    ap = doc_parser("python -m mok_model.sim.study", __doc__)
    ap.add_argument("--quick", action="store_true", help="fewer rows")
    ap.add_argument("--random", type=int_at_least(0, MAX_RANDOM), default=0, metavar="N",
                    help=f"N random valid questions instead of the tables (at most {MAX_RANDOM})")
    ap.add_argument("--seed", type=int_at_least(0, MAX_SEED), default=1, help="--random's seed")
    return run_tool(ap, _run, argv)


def _run(a) -> int:
    """The tables, or --random's questions (their flags checked first)."""
    return random_questions(a.random, a.seed) if a.random else _tables(a)


def _tables(a) -> int:
    """Print every table (module docstring)."""
    t0 = time.perf_counter()
    hw = load_hardware(HW)
    kimi = load_model("kimi-k2")
    base = Scenario(hw, kimi, 16, 4096)
    one = 1 << 22
    print(f"GB300 NVL72, kimi-k2 (384 experts), EP 16, 4096 tokens/GPU unless noted; params {HW} defaults\n")
    print("### A. minibatch size (pull/push, 40 comm SMs, ring = all rows)\n" + HEAD)
    for mb in ((4096, one) if a.quick else (1024, 2048, 4096, 8192, 16384, one)):
        print(_row(f"minibatch {mb if mb != one else 'all rows (1 step)'}", base,
                   Config(minibatch=mb, macrobatch=max(2 * mb, 1 << 17))))
    print("\n### B. comm SMs (minibatch 4096)\n" + HEAD)
    for c in ((4, 40) if a.quick else (4, 8, 16, 24, 40, 64)):
        print(_row(f"comm SMs {c}", base, Config(minibatch=4096, comm_sms=c)))
    print("\n### C. routing skew (minibatch 4096, capacity 1.0)\n" + HEAD)
    for r in (("uniform", "hot:0.1") if a.quick else ("uniform", "zipf:0.8", "zipf:1.2", "hot:0.05", "hot:0.1")):
        print(_row(f"routing {r}", base.with_(routing=r), Config(minibatch=4096, capacity=1.0)))
    print("\n### D. dispatch push vs pull across EP (kimi-k2 with 4 experts per GPU, 2048 tokens)\n" + HEAD)
    for ep in ((8, 64) if a.quick else (8, 16, 32, 64)):
        s = Scenario(hw, kimi.with_(routed_experts=4 * ep), ep, 2048)
        for mode in ("pull", "push"):
            print(_row(f"EP {ep} dispatch {mode}", s, Config(dispatch=mode, minibatch=4096)))
    print("\n### E. schedule and ring buffer (minibatch 4096)\n" + HEAD)
    rows = 4096 * kimi.top_k
    for label, cfg, kw in (("published, ring = 2 x rows", Config(minibatch=4096, macrobatch=2 * rows), {}),
                           ("published, ring = rows / 2", Config(minibatch=4096, macrobatch=rows // 2), {}),
                           ("published, ring = rows / 4", Config(minibatch=4096, macrobatch=rows // 4), {}),
                           ("naive in-order, ring = 2 x rows", Config(minibatch=4096, macrobatch=2 * rows),
                            {"schedule": "naive"})):
        print(_row(label, base, cfg, **kw))
    print("\n### F. two scale-up domains (domain of 8 GPUs, 100 GB/s NIC), one step\n" + HEAD)
    for ep in (16,) if a.quick else (16, 32):
        s = Scenario(hw.with_(domain_size=8), kimi.with_(routed_experts=4 * ep), ep, 2048)
        print(_row(f"EP {ep}, {ep // 8} domains", s, Config(minibatch=one, macrobatch=2 * one)))
        print(_row(f"EP {ep}, {ep // 8} domains, minibatch 4096", s, Config(minibatch=4096)))
    print("\n### G. baselines (EP 16, 4096 tokens)\n" + HEAD)
    for system in ("nccl-torch", "deepep", "comet"):
        print(_row(system, base, None, system))
    large_ep(a.quick)
    link_ports(a.quick)
    source_order(a.quick)
    print(f"\n({time.perf_counter() - t0:.0f} s)")
    return 0


def link_ports(quick: bool = False) -> None:
    """K. Narrow experts whose exchanges outlast their GEMMs: each GPU's link ports carry the
    dispatch and the combine at once (the tuner's knobs, each hardware's shipped parameters)."""
    print("\n### K. link ports shared by dispatch and combine (tuned knobs)\n" + HEAD)
    cases = [("h200-hgx8", "qwen3-next-80b-a3b", 8, 4904), ("h200-hgx8", "qwen3-30b-a3b", 8, 4096),
             ("h200-hgx8", "qwen3-30b-a3b", 8, 8192), ("gb300-nvl72", "qwen3-30b-a3b", 32, 4096),
             ("gb300-nvl72", "qwen3-next-80b-a3b", 64, 4096), ("h200-hgx8", "kimi-k2", 8, 4096)]
    for hw, model, ep, tokens in (cases[:2] if quick else cases):
        s = Scenario(load_hardware(hw), load_model(model), ep, tokens)
        cfg = predict(s).config
        print(_row(f"{hw}, {model}, EP {ep}, {tokens} tokens ({cfg.dispatch}/{cfg.combine}, "
                   f"minibatch {cfg.minibatch}, {cfg.comm_sms} comm SMs)", s, cfg, hw_params=hw))


def source_order(quick: bool = False) -> None:
    """N. One expert per GPU, so every GPU's minibatch k draws on the same slice of sources when
    each expert's rows are sorted by source rank (our kernel's schedule); the what-if
    source_order_rotated 1 starts each GPU's sources after itself. kimi-k2 padded to one expert
    per GPU, MXFP8, 2,048 tokens, a GB300 domain of EP GPUs (the scale-up-domains study's
    what-if), at the knobs the analytic engine tunes with rank order."""
    print("\n### N. source order (kimi-k2, one expert per GPU, MXFP8, 2048 tokens, GB300 domain of "
          "EP GPUs, tuned knobs)\n" + HEAD)
    gb, kimi = load_hardware(HW), load_model("kimi-k2")
    for ep in ((144,) if quick else (144, 576)):
        s = Scenario(gb.with_(domain_size=ep), kimi.with_(routed_experts=ep), ep, 2048, "fwd", "mxfp8")
        cfg = predict(s, None, "mok", load_params(None, HW)).config
        knobs = f"{cfg.dispatch}/{cfg.combine}, minibatch {cfg.minibatch}, {cfg.comm_sms} comm SMs"
        for rotated in (0.0, 1.0):
            order = "sources rotated (what-if)" if rotated else "sources by rank"
            print(_row(f"EP {ep}, {order} ({knobs})", s, cfg,
                       values={"source_order_rotated": rotated}))


def random_questions(n: int, seed: int) -> int:
    """Both engines on `n` random valid questions (module docstring): the simulator over the
    analytic latency, per system, and the largest disagreements."""
    rng = random.Random(seed)
    hws, models, t0 = hardware_names(), model_names(), time.perf_counter()
    rows: list[tuple] = []
    while len(rows) < n:
        hw, m = load_hardware(rng.choice(hws)), load_model(rng.choice(models))
        eps = [e for e in (2, 4, 8, 16, 32, 64) if m.routed_experts % e == 0
               and e <= 2 * max(hw.domain_size, 8)]
        if not eps:
            continue
        ep, tokens = rng.choice(eps), int(round(2 ** rng.uniform(0, 13)))
        pass_, precision = rng.choice(["fwd", "fwd", "bwd"]), rng.choice(["bf16", "bf16", "fp8"])
        routing = rng.choice(["uniform", "uniform", "zipf:1.2", "hot:0.1"])
        system = rng.choice(["mok"] * (len(SYSTEMS) - 1) + list(SYSTEMS[1:]))
        try:
            scn = Scenario(hw, m, ep, tokens, pass_, precision, routing)
            a = predict(scn, None, system)
            s = predict(scn, a.config, system, engine="sim")
        except MokInputError:       # a question the model refuses (e.g. FP8 on a part without it)
            continue
        where = f"{hw.name} {m.name} EP {ep} {tokens} tokens {pass_} {precision} {routing}"
        rows.append((s.latency_ms / a.latency_ms, system, where, a.config, a.latency_ms, s.latency_ms))
    print(f"{n} random questions (seed {seed}), simulator / analytic latency:\n")
    print("| system | questions | min | p5 | median | p95 | max |\n|---|---|---|---|---|---|---|")
    for system in SYSTEMS:
        r = np.array([x[0] for x in rows if x[1] == system])
        if len(r):
            q = np.percentile(r, [0, 5, 50, 95, 100])
            print(f"| {system} | {len(r)} | " + " | ".join(f"{v:.3f}" for v in q) + " |")
    print("\nlargest disagreements:")
    for ratio, system, where, cfg, a_ms, s_ms in sorted(rows, key=lambda x: -abs(np.log(x[0])))[:10]:
        knobs = f" {cfg.dispatch}/{cfg.combine} mb {cfg.minibatch} comm SMs {cfg.comm_sms}" if cfg else ""
        print(f"  {ratio:.3f} {system}: {where}{knobs}: analytic {a_ms:.3f} ms, sim {s_ms:.3f} ms")
    print(f"\n({time.perf_counter() - t0:.0f} s)")
    return 0


def large_ep(quick: bool = False) -> None:
    """H. Balanced routing past one NVL72 (the network model's tiers and rails), default knobs
    but one fixed minibatch of 4096 rows, kimi-k2 with 2 experts per GPU, 2048 tokens/GPU."""
    print("\n### H. past one NVL72: tiers and rails (kimi-k2, 2 experts per GPU, 2048 tokens, "
          "minibatch 4096)\n" + HEAD)
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
