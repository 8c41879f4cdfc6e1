"""Scale-up domains: the same MoE layer on one-hop domains of 8 to 1,024 GPUs and on links of 1x,
2x and 4x today's NVLink bandwidth (plus the vr-nvl72 and rubin-ultra-nvl576 presets, and GB300
racks joined by scale-out NICs): where does the layer stop scaling, and do the best knobs change?"""

from __future__ import annotations

from mok_model.baselines import BASELINES
from mok_model.predict import predict
from mok_model.presets import load_hardware, load_model
from mok_model.scenario import Scenario

from .common import (Options, domain_variant, md_table, new_figure, outputs, pad_experts, params_for,
                     save_figure, write_csv, write_summary)
from .runner import sweep

NAME = "scale-up-domains"
TITLE = "Scale-up domain size and link bandwidth: where the MoE layer stops scaling (kimi-k2, MXFP8 fwd)"
MODEL, TOKENS, PRECISION = "kimi-k2", 2048, "mxfp8"
DOMAINS = (8, 72, 144, 576, 1024)
LINKS = (1.0, 2.0, 4.0)
PRESETS = {"vr-nvl72": (8, 72), "rubin-ultra-nvl576": (8, 72, 144, 576)}
RACKS = (8, 72, 144, 576, 1024)  # gb300-nvl72 as shipped: EP > 72 crosses racks over scale-out
EFFICIENT = 0.8  # "stops scaling": weak-scaling efficiency below this
SIM_FROM = 72  # points past this EP also run the simulator (network model): both engines shown
# ... except racks past this EP: their scale-out copies are posted to the NICs without a copy
# window, so every cross-rack copy is a flow at once (EP 1024: 440,682 flows, 422 s on 2 cores)
SIM_RACKS_MAX = 144
# the what-if series whose GPUs take each expert's sources starting after themselves
ROTATED = "gb300 domain, links x1, sources rotated"


def _hardware(pt: dict):
    if pt["series"].startswith("gb300 domain"):
        return domain_variant(load_hardware("gb300-nvl72"), pt["ep"], pt["link"]), "gb300-nvl72"
    name = "gb300-nvl72" if pt["series"] == "gb300 racks + scale-out" else pt["series"]
    return load_hardware(name), name


def _point(pt: dict) -> dict:
    hw, pname = _hardware(pt)
    model, note = pad_experts(load_model(MODEL), pt["ep"])
    scn = Scenario(hw, model, pt["ep"], TOKENS, "fwd", PRECISION, "uniform", pt["seed"])
    params, _ = params_for(pname)
    if pt.get("rotated"):  # the what-if schedule: each GPU's sources start after itself
        params = params.with_design(source_order_rotated=1.0)
    ana = predict(scn, None, "mok", params)  # knobs tuned on the analytic model
    racks = pt["series"] == "gb300 racks + scale-out"
    run_sim = (pt["ep"] > SIM_FROM and not (racks and pt["ep"] > SIM_RACKS_MAX)) or pt["engine"] == "sim"
    sim = predict(scn, ana.config, "mok", params, "sim") if run_sim else None
    mok = sim if pt["engine"] == "sim" else ana
    base = {b: predict(scn, None, b, params, pt["engine"]).latency_ms for b in BASELINES}
    best = min(base, key=base.get)
    c = mok.config
    row = {"series": pt["series"], "link_x": pt["link"], "ep": pt["ep"], "routed_experts": model.routed_experts,
           "domains": scn.domains, "mok_ms": mok.latency_ms, "tokens_per_s_per_gpu": TOKENS / (mok.latency_ms * 1e-3),
           "mok_analytic_ms": ana.latency_ms, "mok_sim_ms": sim.latency_ms if sim else "",
           "sim_vs_analytic": (sim.latency_ms - ana.latency_ms) / ana.latency_ms if sim else "",
           "best_baseline": best, "best_baseline_ms": base[best], "speedup": base[best] / mok.latency_ms,
           "dispatch": c.dispatch, "combine": c.combine, "minibatch": c.minibatch, "comm_sms": c.comm_sms,
           "capacity": c.capacity, "bound": mok.extra.get("bound", ""), "padding": note,
           **{f"t_{k}_ms": v for k, v in ana.breakdown_ms.items()}}
    if sim:
        row.update({f"sim_{k}_ms": v for k, v in sim.breakdown_ms.items()})
        row["sim_link_busy_ms"] = max(sim.work_ms["link_egress"], sim.work_ms["link_ingress"])
        row["sim_limiter"] = sim.extra["limiter"]
    return row


def points(opts: Options) -> list[dict]:
    doms = (8, 72, 144) if opts.quick else DOMAINS
    links = (1.0, 2.0) if opts.quick else LINKS
    pts = [{"series": f"gb300 domain, links x{x:g}", "link": x, "ep": d} for x in links for d in doms]
    pts += [{"series": ROTATED, "link": 1.0, "ep": d, "rotated": True} for d in doms]
    if not opts.quick:
        pts += [{"series": name, "link": 1.0, "ep": ep} for name, eps in PRESETS.items() for ep in eps]
        pts += [{"series": "gb300 racks + scale-out", "link": 1.0, "ep": ep} for ep in RACKS]
    for p in pts:
        p.update(seed=opts.seed, engine=opts.engine)
    return pts


def scaling(rows: list[dict]) -> list[dict]:
    """Per series: weak-scaling efficiency vs its smallest EP and the first EP below EFFICIENT."""
    out = []
    for s in dict.fromkeys(r["series"] for r in rows):
        sel = sorted((r for r in rows if r["series"] == s), key=lambda r: r["ep"])
        ref = sel[0]["mok_ms"]
        for r in sel:
            r["efficiency"] = ref / r["mok_ms"]
        stop = next((r["ep"] for r in sel if r["efficiency"] < EFFICIENT), None)
        knobs = sorted({(r["dispatch"], r["combine"], r["minibatch"], r["comm_sms"]) for r in sel}, key=str)
        out.append({"series": s, "eps": "/".join(str(r["ep"]) for r in sel),
                    "efficiency_at_largest": sel[-1]["efficiency"],
                    "stops_scaling_at": stop if stop is not None else f"> {sel[-1]['ep']}",
                    "distinct_best_knobs": len(knobs)})
    return out


def knob_lines(rows: list[dict]) -> str:
    """One markdown bullet per series listing the tuned knobs at each EP."""
    out = []
    for s in dict.fromkeys(r["series"] for r in rows):
        sel = sorted((r for r in rows if r["series"] == s), key=lambda r: r["ep"])
        out.append(f"- {s}: " + "; ".join(f"EP {r['ep']}: {r['dispatch']}/{r['combine']}, {r['minibatch']}, "
                                          f"{r['comm_sms']}" for r in sel))
    return "\n".join(out)


def growth(rows: list[dict], series: str, prefix: str = "t_") -> list[tuple[str, float]]:
    """Breakdown terms (analytic "t_", simulator "sim_") of one series ranked by how much they
    grow from its smallest to its largest EP that has them."""
    sel = sorted((r for r in rows if r["series"] == series and f"{prefix}steady_state_ms" in r),
                 key=lambda r: r["ep"])
    if len(sel) < 2:
        return []
    lo, hi = sel[0], sel[-1]
    terms = [k for k in hi if k.startswith(prefix) and k.endswith("_ms") and k != "sim_link_busy_ms"]
    d = {k[len(prefix):-3]: hi[k] - lo.get(k, 0.0) for k in terms}
    return sorted(d.items(), key=lambda kv: -kv[1])


def drivers(rows: list[dict]) -> str:
    """Which terms drive the answer: per series, what grows with EP in each engine, and the two
    engines side by side where both ran."""
    out = []
    for s in dict.fromkeys(r["series"] for r in rows):
        sel = sorted((r for r in rows if r["series"] == s), key=lambda r: r["ep"])
        ga = growth(rows, s)
        gs = growth(rows, s, "sim_")
        line = (f"- {s}: analytic, EP {sel[0]['ep']} -> {sel[-1]['ep']}: "
                + ", ".join(f"{k} {v:+.3f} ms" for k, v in ga[:3]))
        both = [r for r in sel if r["mok_sim_ms"] != ""]
        if len(both) >= 2:
            line += (f"; simulator, EP {both[0]['ep']} -> {both[-1]['ep']}: "
                     + ", ".join(f"{k} {v:+.3f} ms" for k, v in gs[:3]))
        if both:
            line += "; sim vs analytic " + ", ".join(f"EP {r['ep']} {r['sim_vs_analytic']:+.1%} "
                                                     f"({r['sim_limiter']})" for r in both)
        out.append(line)
    return "\n".join(out)


def run(opts: Options):
    rows = sweep(_point, points(opts), opts, NAME)
    summ = scaling(rows)
    first = rows[0]["series"]
    grew = growth(rows, first)
    write_csv(opts.out / f"{NAME}.csv", rows)

    fig, ax = new_figure(2, width=6.6)
    for s in dict.fromkeys(r["series"] for r in rows):
        sel = sorted((r for r in rows if r["series"] == s), key=lambda r: r["ep"])
        style = "-o" if s.startswith("gb300 domain") else ("--x" if "racks" in s else ":s")
        ax[0, 0].plot([r["ep"] for r in sel], [r["mok_ms"] for r in sel], style, label=s)
        ax[0, 1].plot([r["ep"] for r in sel], [r["minibatch"] for r in sel], style, label=s)
    eps = sorted({r["ep"] for r in rows})
    ax[0, 0].set(xscale="log", xlabel="EP = GPUs in the domain", ylabel="MoK forward latency (ms)",
                 title=f"{MODEL}, {TOKENS} tokens/GPU (flat = perfect weak scaling)")
    ax[0, 1].set(xscale="log", yscale="log", xlabel="EP = GPUs in the domain", ylabel="tuned minibatch (rows)",
                 title="Best minibatch per point (other knobs in the CSV)")
    mbs = sorted({r["minibatch"] for r in rows})
    ax[0, 1].set_yticks(mbs, [str(b) for b in mbs])
    ax[0, 1].minorticks_off()
    for a in ax.ravel():
        a.set_xticks(eps, [str(e) for e in eps])
        a.legend(fontsize=7)
    save_figure(fig, opts.out / f"{NAME}.png")

    head = {s["series"]: f"efficiency {s['efficiency_at_largest']:.2f} at EP {s['eps'].split('/')[-1]}, "
                         f"stops scaling at {s['stops_scaling_at']}" for s in summ}
    pnotes = sorted({params_for(n)[1] for n in ("gb300-nvl72", *PRESETS)})
    pads = sorted({r["padding"] for r in rows if r["padding"]})
    sections = [
        ("Setup", f"""
{MODEL}, {TOKENS} tokens per GPU (fixed: weak scaling), forward, {PRECISION.upper()} routed experts,
uniform seeded routing, all knobs tuned at every point.
"gb300 domain, links xN": a GB300 GPU whose one-hop NVLink domain holds all EP GPUs (domain_size =
EP, a what-if; today's is 72) with N x today's 900 GB/s per direction. "{ROTATED}": links x1 with
a what-if schedule whose sources of each expert start after the receiving GPU instead of at rank 0
(`source_order_rotated` 1; docs/sim-study.md "N"). "gb300 racks + scale-out": the
shipped preset, EP > 72 spans racks over 100 GB/s scale-out NICs. vr-nvl72 and rubin-ultra-nvl576:
the presets as shipped, up to their domain size.
"""),
        ("Where it stops scaling", f"Efficiency = latency at the smallest EP / latency at this EP (1 = flat); "
                                   f"\"stops scaling\" = first EP below {EFFICIENT}.\n\n"
         + md_table(summ, ["series", "eps", "efficiency_at_largest", "stops_scaling_at", "distinct_best_knobs"])
         + "\n\nBest knobs per EP (dispatch/combine, minibatch, comm SMs):\n\n" + knob_lines(rows)),
        ("All points", md_table(rows, ["series", "ep", "routed_experts", "mok_ms", "mok_analytic_ms", "mok_sim_ms",
                                       "sim_vs_analytic", "efficiency", "best_baseline_ms",
                                       "speedup", "dispatch", "combine", "minibatch", "comm_sms", "bound"])),
        ("Which terms drive the answer", f"""
Points past EP {SIM_FROM} run both engines: the analytic model, and the simulator with the network
model (flows max-min fair over the preset's topology: one switch tier for the "gb300 domain"
what-ifs, two tiers for rubin-ultra-nvl576, NVL72 racks on a rail-optimized scale-out network),
with the knobs the analytic tuner picked (racks only up to EP {SIM_RACKS_MAX}: their cross-rack copies
are posted to the NICs without a copy window, so EP 1024 is 440,682 concurrent-capable flows and
about 7 minutes on the 2-core machine). `mok_ms`, the efficiency and the speedup use the
`{opts.engine}` engine; baselines use it too. Terms that grow most with EP (ms added):

""" + drivers(rows)),
        ("Assumptions behind the numbers", "- Experts not divisible by EP are padded: " + "; ".join(pads)
         + ". Padding keeps top_k and widths, so each GPU still receives about tokens x top_k rows.\n"
         "- A \"gb300 domain\" of N GPUs is a what-if: one switch tier with the same per-link latency "
         "(0.6 µs prior); the switch radix a real 1,024-GPU tier would need is not modelled. "
         "rubin-ultra-nvl576 has two tiers (leaves of 144 dies, presets/hardware.toml).\n"
         f"- What grows with EP in \"{first}\" (ms added from the smallest to the largest EP, model "
         "breakdown terms): " + ", ".join(f"{k} +{v:.3f}" for k, v in grew[:4]) + ". The schedule "
         "term holds the all-gather of every GPU's routing decisions and the schedule build over all "
         "P x tokens x top_k routes, so it grows linearly with P at fixed tokens per GPU.\n- "
         + "\n- ".join(pnotes) + "."),
    ]
    write_summary(opts.out / "summary.md", TITLE, sections, opts, f"{NAME}.png")
    return outputs(opts, NAME, rows, head)
