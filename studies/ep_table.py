"""The EP-16 table: MoK and each baseline, forward and backward, for kimi-k2 and glm-5 at 1,024,
2,048 and 4,096 tokens per GPU, with the best baseline and the speedup, next to the published rows
(shared data/published.json, as committed in calibration/runs/published/) with the per-row error."""

from __future__ import annotations

from pathlib import Path

from mok_model.baselines import BASELINES
from mok_model.predict import predict
from mok_model.presets import load_hardware, load_model
from mok_model.records import read_records
from mok_model.scenario import Scenario

from .common import Options, md_table, new_figure, outputs, params_for, save_figure, write_csv, write_summary
from .runner import sweep

NAME = "ep-table"
TITLE = "EP 16 on GB300 NVL72: MoK vs baselines, forward and backward, next to the published rows"
HARDWARE, EP, PRECISION = "gb300-nvl72", 16, "bf16"
MODELS = ("kimi-k2", "glm-5")
TOKENS = (1024, 2048, 4096)
CODES = {"N": "nccl-torch", "D": "deepep", "H": "hybridep"}
PUBLISHED_RUNS = Path(__file__).resolve().parents[1] / "calibration/runs/published/gb300_table1.jsonl"


def published_rows(path: Path = PUBLISHED_RUNS) -> dict[tuple, dict]:
    """Published rows keyed by (model preset, tokens, pass), from the committed records of
    docs/sources.md (calibration/published.py): MoK and best-baseline latencies."""
    codes = {system: code for code, system in CODES.items()}
    rows: dict[tuple, dict] = {}
    for rec in read_records([path]):
        row = rows.setdefault((rec["model"], rec["tokens"], rec["pass"]), {})
        if rec["system"] == "mok":
            row["mok_ms"] = rec["latency_ms"]["median"]
        else:
            row.update(best_baseline=codes[rec["system"]], best_baseline_ms=rec["latency_ms"]["median"])
    return rows


def _point(pt: dict) -> dict:
    scn = Scenario(load_hardware(HARDWARE), load_model(pt["model"]), EP, pt["tokens"], pt["pass"],
                   PRECISION, "uniform", pt["seed"])
    params, _ = params_for(HARDWARE)
    row = {"model": pt["model"], "tokens": pt["tokens"], "pass": pt["pass"]}
    mok = predict(scn, None, "mok", params, pt["engine"]).with_band(params)
    row["mok_ms"] = mok.latency_ms
    # the fit's 90% band (mok_model/band.py; analytic engine only, NaN without a band)
    row["mok_lo_ms"] = mok.band.lo if mok.band.lo is not None else float("nan")
    row["mok_hi_ms"] = mok.band.hi if mok.band.hi is not None else float("nan")
    for b in BASELINES:
        row[f"{b}_ms"] = predict(scn, None, b, params, pt["engine"]).latency_ms
    best = min(BASELINES, key=lambda b: row[f"{b}_ms"])
    row.update(best_baseline=best, best_baseline_ms=row[f"{best}_ms"],
               speedup=row[f"{best}_ms"] / row["mok_ms"],
               mok_config=f"{mok.config.dispatch}/{mok.config.combine} mb={mok.config.minibatch} "
                          f"comm={mok.config.comm_sms}")
    return row


def _band_note(engine: str) -> str:
    """What the MoK band columns are, for the summary."""
    from mok_model.band import no_band

    params, _ = params_for(HARDWARE)
    why = no_band(params, engine)
    if why:
        return f"empty ({why})."
    u = params.uncertainty
    return (f"the central 90% of the MoK latency re-predicted with the {u['n']} parameter vectors "
            f"of a {u['method']} over the {u['groups']} workloads of the fit ({', '.join(u['free'])} "
            f"refitted, knobs held): the fit's uncertainty, not the model's error on other "
            f"workloads. The published rows are the fit's own records.")


def with_published(rows: list[dict], pub: dict[tuple, dict]) -> list[dict]:
    """Add the published numbers and per-row errors (%) where a published row exists."""
    for r in rows:
        p = pub.get((r["model"], r["tokens"], r["pass"]))
        if not p:
            continue
        sys_pub = CODES[p["best_baseline"]]
        r.update(pub_mok_ms=p["mok_ms"], pub_best_baseline=sys_pub, pub_best_baseline_ms=p["best_baseline_ms"],
                 pub_speedup=p["best_baseline_ms"] / p["mok_ms"],
                 err_mok_pct=100 * (r["mok_ms"] / p["mok_ms"] - 1),
                 err_same_baseline_pct=100 * (r[f"{sys_pub}_ms"] / p["best_baseline_ms"] - 1),
                 err_speedup_pct=100 * (r["speedup"] / (p["best_baseline_ms"] / p["mok_ms"]) - 1))
    return rows


def run(opts: Options):
    tokens = (1024, 2048) if opts.quick else TOKENS
    pts = [{"model": m, "tokens": t, "pass": p, "seed": opts.seed, "engine": opts.engine}
           for m in MODELS for t in tokens for p in ("fwd", "bwd")]
    rows = with_published(sweep(_point, pts, opts, NAME), published_rows())
    write_csv(opts.out / f"{NAME}.csv", rows)

    fig, ax = new_figure(2, width=7.0)
    for j, ps in enumerate(("fwd", "bwd")):
        sel = [r for r in rows if r["pass"] == ps]
        x = range(len(sel))
        w = 0.8 / (1 + len(BASELINES))
        for i, s in enumerate(("mok",) + BASELINES):
            ax[0, j].bar([k + (i - 2) * w for k in x], [r[f"{s}_ms"] for r in sel], w, label=s,
                         color="tab:red" if s == "mok" else None, alpha=1 if s == "mok" else 0.6)
        band = [(k, r) for k, r in zip(x, sel) if r["mok_lo_ms"] == r["mok_lo_ms"]]  # not NaN
        if band:
            ax[0, j].errorbar([k - 2 * w for k, _ in band], [r["mok_ms"] for _, r in band],
                              yerr=[[r["mok_ms"] - r["mok_lo_ms"] for _, r in band],
                                    [r["mok_hi_ms"] - r["mok_ms"] for _, r in band]],
                              fmt="none", ecolor="black", capsize=3, lw=1,
                              label="MoK 90% band (fit)")
        pm = [(k, r) for k, r in zip(x, sel) if "pub_mok_ms" in r]
        ax[0, j].plot([k - 2 * w for k, _ in pm], [r["pub_mok_ms"] for _, r in pm], "k*", ms=11,
                      label="published MoK")
        ax[0, j].plot([k + (1 + BASELINES.index(r["pub_best_baseline"]) - 2) * w for k, r in pm],
                      [r["pub_best_baseline_ms"] for _, r in pm], "kD", ms=6, label="published best baseline")
        for k, r in zip(x, sel):
            ax[0, j].text(k, max(r[f"{s}_ms"] for s in ("mok",) + BASELINES) * 1.02, f"{r['speedup']:.2f}x",
                          ha="center", fontsize=7)
        ax[0, j].set_xticks(list(x), [f"{r['model']}\n{r['tokens']}" for r in sel], fontsize=7)
        ax[0, j].set(ylabel="latency (ms)", title=f"{ps}: predicted bars, published markers; label = MoK speedup")
        ax[0, j].legend(fontsize=7)
    save_figure(fig, opts.out / f"{NAME}.png")

    pubd = [r for r in rows if "pub_mok_ms" in r]
    band_note = _band_note(opts.engine)
    mape = sum(abs(r["err_mok_pct"]) for r in pubd) / len(pubd) if pubd else float("nan")
    mape_b = sum(abs(r["err_same_baseline_pct"]) for r in pubd) / len(pubd) if pubd else float("nan")
    head = {"published rows matched": len(pubd), "MoK mean |error|": f"{mape:.1f}%",
            "published-best-baseline mean |error|": f"{mape_b:.1f}%",
            "predicted speedup range":
                f"{min(r['speedup'] for r in rows):.2f}x to {max(r['speedup'] for r in rows):.2f}x"}
    _, pnote = params_for(HARDWARE)
    p = params_for(HARDWARE)[0]
    fitted = "the published rows themselves (in-sample: these errors are fit residuals, not validation)" \
        if p.fitted_on else "nothing (priors)"
    sections = [
        ("Setup", f"""
{HARDWARE}, EP {EP}, {PRECISION.upper()} (the table does not state precision: BF16 assumed, as the
calibration does), uniform seeded routing; MoK knobs tuned per row. kimi-k2 stands for the published
kimi-k2.7-code and glm-5 for glm-5.2 (same geometry as published.json states).
"""),
        ("Headline", f"""
{len(pubd)} rows have a published counterpart. Mean |error| of the MoK latency: **{mape:.1f}%**; of
the published best baseline's latency (the same system, nccl-torch): **{mape_b:.1f}%**. The
parameters were fitted on {fitted}. Rows without a published counterpart are predictions.
"""),
        ("Predicted table", md_table(rows, ["model", "tokens", "pass", "mok_ms", "mok_lo_ms", "mok_hi_ms"]
                                     + [f"{b}_ms" for b in BASELINES]
                                     + ["best_baseline", "speedup", "mok_config"])),
        ("Against the published rows", md_table(pubd, ["model", "tokens", "pass", "mok_ms", "pub_mok_ms", "err_mok_pct",
                                                       "pub_best_baseline", "pub_best_baseline_ms",
                                                       "err_same_baseline_pct", "speedup", "pub_speedup",
                                                       "err_speedup_pct"])),
        ("Assumptions behind the numbers", f"""
- Published latencies are *measured* by the publication (Table 1); every other number is predicted.
- mok_lo_ms-mok_hi_ms (error bars on the MoK bars): {band_note}
- The published best baseline is compared with our prediction of the same system; our own best
  baseline may be another system.
- {pnote}.
"""),
    ]
    write_summary(opts.out / "summary.md", TITLE, sections, opts, f"{NAME}.png")
    return outputs(opts, NAME, rows, head)
