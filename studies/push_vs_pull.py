"""Push vs pull dispatch: latency and signalling overhead versus EP degree.

The published dispatch benchmark: 7,168 BF16 tokens of width 7,168 per GPU, 4 local experts per
GPU, 4 uniformly random routes per token. We build that layer as a model variant (hidden 7168,
top_k 4, routed_experts 4*EP, expert width and shared expert as kimi-k2's) and ask the model for
the dispatch's data movement and its completion signalling, with the combine fixed to push.
"""

from __future__ import annotations

import math


from mok_model.analytic import loads
from mok_model.predict import predict
from mok_model.presets import load_hardware, load_model
from mok_model.scenario import Config, Scenario

from .common import Options, md_table, new_figure, outputs, params_for, save_figure, write_csv, write_summary
from .runner import sweep

NAME = "push-vs-pull"
TITLE = "Push vs pull dispatch: latency and signalling overhead vs EP degree (8 to 576)"
TOKENS, HIDDEN, LOCAL_EXPERTS, TOP_K = 7168, 7168, 4, 4
HARDWARE = {  # preset -> how EP beyond its domain is reached
    "gb300-nvl72": "EP > 72 spans several NVL72 racks over the scale-out NICs (100 GB/s per GPU)",
    "rubin-ultra-nvl576": "every EP up to 576 lies inside one NVLink domain",
}
EPS = (8, 16, 32, 64, 72, 144, 288, 576)
EPS_QUICK = (8, 16, 72, 144)
MINIBATCH = 4096  # the published default
COMM_SMS = 40  # the published forward default on a 148-SM GPU


def layer(hw_name: str, ep: int, seed: int) -> Scenario:
    """The benchmark's layer on `ep` GPUs of a hardware preset."""
    base = load_model("kimi-k2")
    m = base.with_(name=f"dispatch-bench-ep{ep}", hidden=HIDDEN, top_k=TOP_K,
                   routed_experts=LOCAL_EXPERTS * ep, shared_experts=0, shared_width=0)
    return Scenario(load_hardware(hw_name), m, ep, TOKENS, "fwd", "bf16", "uniform", seed)


def _point(pt: dict) -> dict:
    scn = layer(pt["hardware"], pt["ep"], pt["seed"])
    params, _ = params_for(pt["hardware"])
    cfg = Config(dispatch=pt["mode"], combine="push", minibatch=MINIBATCH, comm_sms=COMM_SMS)
    pred = predict(scn, cfg, "mok", params, pt["engine"])
    busiest = float(loads(scn).rows.max())
    M = max(1, math.ceil(busiest / MINIBATCH))
    P = scn.ep
    if pt["mode"] == "push":  # the receiver waits for a completion flag from every peer
        wait_us = params["signal_remote_us"] + (P - 1) * params["push_signal_per_peer_us"]
    else:  # its own comm SMs release a GPU-local counter
        wait_us = params["signal_local_us"]
    signal_ms = M * wait_us * 1e-3
    move_ms = pred.work_ms.get("dispatch", float("nan"))
    return {"hardware": pt["hardware"], "ep": P, "mode": pt["mode"], "domains": scn.domains,
            "minibatches": M, "dispatch_move_ms": move_ms, "signal_ms": signal_ms,
            "dispatch_ms": move_ms + signal_ms, "layer_latency_ms": pred.latency_ms,
            "layer_signals_ms": pred.work_ms.get("signals", float("nan")),
            # the simulator reports the median wait per minibatch it observed (absent: analytic)
            "sim_signal_wait_per_minibatch_us": 1e3 * pred.extra.get("dispatch_signal_wait_ms", float("nan"))}


def run(opts: Options):
    eps = EPS_QUICK if opts.quick else EPS
    pts = [{"hardware": hw, "ep": ep, "mode": mode, "seed": opts.seed, "engine": opts.engine}
           for hw in HARDWARE for ep in eps for mode in ("push", "pull")]
    rows = sweep(_point, pts, opts, NAME)
    write_csv(opts.out / f"{NAME}.csv", rows)

    fig, ax = new_figure(2)
    styles = {"push": "-o", "pull": "--s"}
    colors = {"gb300-nvl72": "tab:blue", "rubin-ultra-nvl576": "tab:orange"}
    for hw in HARDWARE:
        for mode in ("push", "pull"):
            sel = [r for r in rows if r["hardware"] == hw and r["mode"] == mode]
            x = [r["ep"] for r in sel]
            ax[0, 0].plot(x, [r["dispatch_ms"] for r in sel], styles[mode], color=colors[hw], label=f"{mode}, {hw}")
            sig = [r["signal_ms"] * 1e3 for r in sel]
            same = hw != "gb300-nvl72" and sig == [r["signal_ms"] * 1e3 for r in rows
                                                   if r["hardware"] == "gb300-nvl72" and r["mode"] == mode]
            if not same:  # identical signalling parameters draw one line
                ax[0, 1].plot(x, sig, styles[mode], color="black" if mode == "push" else "grey",
                              label=f"{mode}" if hw == "gb300-nvl72" else f"{mode}, {hw}")
    ax[0, 0].set(xscale="log", xlabel="EP degree (GPUs)", ylabel="dispatch latency (ms)",
                 title="Dispatch: data movement + completion signalling")
    ax[0, 1].set(xscale="log", yscale="log", xlabel="EP degree (GPUs)", ylabel="signalling overhead (µs)",
                 title="Signalling overhead of the dispatch (both presets)")
    for a in ax.ravel():
        a.axvline(72, color="grey", lw=0.8, ls=":")
        a.set_xticks(list(eps), ["" if e == 64 else str(e) for e in eps])  # 64 sits next to 72
        a.legend(fontsize=8)
    save_figure(fig, opts.out / f"{NAME}.png")

    # headline: push/pull signalling ratio at the largest EP, per hardware
    head = {}
    table = []
    for hw in HARDWARE:
        for ep in eps:
            push = next(r for r in rows if r["hardware"] == hw and r["ep"] == ep and r["mode"] == "push")
            pull = next(r for r in rows if r["hardware"] == hw and r["ep"] == ep and r["mode"] == "pull")
            table.append({"hardware": hw, "ep": ep, "push_signal_us": push["signal_ms"] * 1e3,
                          "pull_signal_us": pull["signal_ms"] * 1e3,
                          "signal_ratio": push["signal_ms"] / pull["signal_ms"],
                          "push_dispatch_ms": push["dispatch_ms"], "pull_dispatch_ms": pull["dispatch_ms"],
                          "push_layer_ms": push["layer_latency_ms"], "pull_layer_ms": pull["layer_latency_ms"]})
        last = table[-1]
        head[f"{hw} EP {last['ep']}: push/pull signalling"] = f"{last['signal_ratio']:.1f}x"
    _, pnote_a = params_for("gb300-nvl72")
    _, pnote_b = params_for("rubin-ultra-nvl576")
    p, _ = params_for("gb300-nvl72")
    sections = [
        ("Setup", f"""
Layer: {TOKENS:,} BF16 tokens of width {HIDDEN:,} per GPU, {LOCAL_EXPERTS} local experts per GPU
(routed_experts = 4 x EP), top_k {TOP_K} uniformly random distinct experts per token (seeded), one
row per route (not de-duplicated). Expert width 2048 (kimi-k2's; it does not affect dispatch).
Knobs fixed: minibatch {MINIBATCH}, {COMM_SMS} comm SMs, combine push, macrobatch 131072, capacity 0.5
(published defaults); only the dispatch mode changes.
Hardware: gb300-nvl72 ({HARDWARE['gb300-nvl72']}); rubin-ultra-nvl576 ({HARDWARE['rubin-ultra-nvl576']}).
"""),
        ("Results", md_table(table, ["hardware", "ep", "push_signal_us", "pull_signal_us", "signal_ratio",
                                     "push_dispatch_ms", "pull_dispatch_ms", "push_layer_ms", "pull_layer_ms"])),
        ("Assumptions behind the numbers", f"""
- Dispatch latency = the busiest GPU's dispatch data movement (model work term `dispatch`:
  bytes over min(link, comm SMs x per-SM copy rate)) + its completion signalling.
- Signalling = minibatches x one wait per minibatch. Push: the receiver waits for a flag from every
  peer, signal_remote_us + (P-1) x push_signal_per_peer_us = {p['signal_remote_us']} + (P-1) x
  {p['push_signal_per_peer_us']} µs on gb300-nvl72. Pull: one GPU-local counter, signal_local_us =
  {p['signal_local_us']} µs. These are the model's parameters (their sources are in the params file),
  not measurements of an NVL72.
- {pnote_a}. {pnote_b}.
- The layer latency column is the whole MoK forward pass with these knobs (not tuned).
- With `--engine sim` the CSV also holds the simulator's observed median dispatch wait per
  minibatch (column sim_signal_wait_per_minibatch_us); the plotted signalling stays the formula above.
"""),
    ]
    write_summary(opts.out / "summary.md", TITLE, sections, opts, f"{NAME}.png")
    return outputs(opts, NAME, rows, head)
