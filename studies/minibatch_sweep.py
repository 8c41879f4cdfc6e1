"""Forward throughput versus minibatch size on 16 GPUs, MXFP8, for four model shapes and several
token counts; the best size per curve and the best-over-worst ratio (published: 1.38x to 3.53x)."""

from __future__ import annotations

from mok_model.predict import predict
from mok_model.presets import load_hardware, load_model
from mok_model.scenario import Config, Scenario, default_config

from .common import Options, md_table, new_figure, outputs, params_for, save_figure, write_csv, write_summary
from .runner import sweep

NAME = "minibatch-sweep"
TITLE = "Forward throughput vs minibatch size (EP 16, MXFP8, GB300 NVL72)"
HARDWARE, EP = "gb300-nvl72", 16
MODELS = ("kimi-k2", "deepseek-v3", "glm-5", "qwen3-235b-a22b")
TOKENS = (1024, 2048, 4096, 8192)
MINIBATCHES = (256, 512, 1024, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768)
RECOMMENDED = (2048, 16384)  # the published recommended range
PUBLISHED = (1.38, 3.53)


def _point(pt: dict) -> dict:
    scn = Scenario(load_hardware(HARDWARE), load_model(pt["model"]), EP, pt["tokens"], "fwd",
                   "mxfp8", "uniform", pt["seed"])
    params, _ = params_for(HARDWARE)
    d = default_config(scn)
    cfg = Config(dispatch=d.dispatch, combine=d.combine, minibatch=pt["minibatch"],
                 comm_sms=d.comm_sms, macrobatch=max(d.macrobatch, pt["minibatch"]), capacity=d.capacity)
    pred = predict(scn, cfg, "mok", params, pt["engine"])
    return {"model": pt["model"], "tokens": pt["tokens"], "minibatch": pt["minibatch"],
            "latency_ms": pred.latency_ms,
            "tokens_per_s_per_gpu": pt["tokens"] / (pred.latency_ms * 1e-3),
            "minibatches": pred.extra.get("minibatches", ""), "bound": pred.extra.get("bound", "")}


def curves(rows: list[dict]) -> list[dict]:
    """Per (model, tokens): best and worst minibatch size and the best-over-worst ratio."""
    out = []
    keys = sorted({(r["model"], r["tokens"]) for r in rows}, key=lambda k: (MODELS.index(k[0]), k[1]))
    for model, tokens in keys:
        sel = [r for r in rows if r["model"] == model and r["tokens"] == tokens]
        best = max(sel, key=lambda r: (r["tokens_per_s_per_gpu"], -r["minibatch"]))
        worst = min(sel, key=lambda r: r["tokens_per_s_per_gpu"])
        rec = [r for r in sel if RECOMMENDED[0] <= r["minibatch"] <= RECOMMENDED[1]] or sel
        tput = [r["tokens_per_s_per_gpu"] for r in rec]
        out.append({"model": model, "tokens": tokens, "best_minibatch": best["minibatch"],
                    "best_ms": best["latency_ms"], "worst_minibatch": worst["minibatch"],
                    "worst_ms": worst["latency_ms"],
                    "best_over_worst": best["tokens_per_s_per_gpu"] / worst["tokens_per_s_per_gpu"],
                    "best_over_worst_recommended": max(tput) / min(tput)})
    return out


def run(opts: Options):
    models = MODELS[:2] if opts.quick else MODELS
    tokens = (1024, 4096) if opts.quick else TOKENS
    mbs = (1024, 4096, 16384) if opts.quick else MINIBATCHES
    pts = [{"model": m, "tokens": t, "minibatch": b, "seed": opts.seed, "engine": opts.engine}
           for m in models for t in tokens for b in mbs]
    rows = sweep(_point, pts, opts, NAME)
    write_csv(opts.out / f"{NAME}.csv", rows)
    cur = curves(rows)

    fig, axes = new_figure(2, 2, width=5.2, height=3.8)
    for ax, model in zip(axes.ravel(), models):
        for t in tokens:
            sel = [r for r in rows if r["model"] == model and r["tokens"] == t]
            c = next(c for c in cur if c["model"] == model and c["tokens"] == t)
            line, = ax.plot([r["minibatch"] for r in sel], [r["tokens_per_s_per_gpu"] / 1e6 for r in sel],
                            "-o", ms=3, label=f"{t} tok/GPU ({c['best_over_worst']:.2f}x)")
            b = next(r for r in sel if r["minibatch"] == c["best_minibatch"])
            ax.plot([b["minibatch"]], [b["tokens_per_s_per_gpu"] / 1e6], "*", ms=13, color=line.get_color(),
                    markeredgecolor="black")
        ax.axvspan(2048, 16384, color="green", alpha=0.06)
        ax.set(xscale="log", title=model, xlabel="minibatch (routed rows)", ylabel="M tokens/s per GPU")
        ticks = [b for b in mbs if b in (256, 1024, 2048, 4096, 8192, 16384, 32768)]
        ax.set_xticks(ticks, [f"{b // 1024}k" if b >= 1024 else str(b) for b in ticks])
        ax.minorticks_off()
        ax.legend(fontsize=7, title="best/worst", title_fontsize=7, loc="best")
    for ax in axes.ravel()[len(models):]:
        ax.set_visible(False)
    fig.suptitle("MoK forward throughput vs minibatch size (★ best; shaded: published recommended range)")
    save_figure(fig, opts.out / f"{NAME}.png")

    ratios = [c["best_over_worst"] for c in cur]
    rec = [c["best_over_worst_recommended"] for c in cur]
    head = {"best-over-worst range":
            f"{min(ratios):.2f}x to {max(ratios):.2f}x (published {PUBLISHED[0]}x to {PUBLISHED[1]}x)",
            "within 2048-16384": f"{min(rec):.2f}x to {max(rec):.2f}x"}
    _, pnote = params_for(HARDWARE)
    sections = [
        ("Setup", f"""
{HARDWARE}, EP {EP}, forward, MXFP8 routed experts (BF16 shared expert), uniform seeded routing.
Models: {', '.join(models)}. Tokens per GPU: {', '.join(map(str, tokens))}. Minibatch sizes:
{', '.join(map(str, mbs))} routed rows. Other knobs at the published defaults (pull dispatch, push
combine, 40 comm SMs, capacity 0.5, macrobatch 131072 or the minibatch if larger).
"""),
        ("Headline", f"Best-over-worst throughput ratio per curve: **{min(ratios):.2f}x to {max(ratios):.2f}x** "
                     f"over the whole grid, {min(rec):.2f}x to {max(rec):.2f}x within the published recommended "
                     f"range {RECOMMENDED[0]}-{RECOMMENDED[1]} (published, *measured*: {PUBLISHED[0]}x to "
                     f"{PUBLISHED[1]}x over the paper's own grid, which is not public)."),
        ("Best minibatch per curve", md_table(cur, ["model", "tokens", "best_minibatch", "best_ms",
                                                    "worst_minibatch", "worst_ms", "best_over_worst",
                                                    "best_over_worst_recommended"])),
        ("Assumptions behind the numbers", f"""
- Throughput = local tokens per GPU / predicted forward latency of the slowest GPU.
- The ratio depends on the swept range: a wider range (e.g. down to 256 rows) raises the worst case.
- {pnote}.
"""),
    ]
    write_summary(opts.out / "summary.md", TITLE, sections, opts, f"{NAME}.png")
    return outputs(opts, NAME, rows, head)
