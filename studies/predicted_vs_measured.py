"""Predicted vs measured: the calibration's validation on the measured H200 runs
(calibration/runs/h200/*.jsonl[.gz]), its plot, and a regret table (how much slower the model's choice
among the measured configurations was than the fastest measured one).

When no measured runs exist the study says so and writes empty outputs: it never invents numbers."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from mok_model.records import read_records, record_files

from mok_model.fileio import atomic_write_text

from .common import Options, md_table, new_figure, outputs, params_for, save_figure, write_csv, write_summary

NAME = "predicted-vs-measured"
TITLE = "Predicted vs measured latency on the H200 runs, and tuner regret"
RUNS_DIR = Path(__file__).resolve().parents[1] / "calibration" / "runs" / "h200"


def measured_records(runs_dir: Path) -> tuple[list[dict], list[str]]:
    """Validated measured records of every *.jsonl (or archived *.jsonl.gz) under runs_dir, and
    the files read."""
    files = [str(p) for p in record_files(runs_dir)] if runs_dir.is_dir() else []
    if not files:
        return [], []
    return [r for r in read_records(files) if r["source"] == "measured"], files


def regret_table(records: list[dict], predicted: np.ndarray) -> list[dict]:
    """Per workload with >= 2 measured MoK configurations: the model's pick among them vs the best."""
    from calibration.validate import group_key

    groups: dict[tuple, list[int]] = {}
    for i, r in enumerate(records):
        if r["system"] == "mok" and np.isfinite(predicted[i]):
            groups.setdefault(group_key(r), []).append(i)
    out = []
    for key, ix in groups.items():
        if len(ix) < 2:
            continue
        meas = np.array([records[i]["latency_ms"]["median"] for i in ix])
        pick = int(np.argmin(predicted[ix]))
        best = int(np.argmin(meas))
        out.append({"hardware": key[0], "model": key[1], "ep": key[2], "tokens": key[3], "pass": key[4],
                    "precision": key[5], "configs": len(ix), "best_measured_ms": float(meas[best]),
                    "model_pick_measured_ms": float(meas[pick]), "regret_pct": 100 * (meas[pick] / meas[best] - 1),
                    "model_pick_id": records[ix[pick]]["id"]})
    return out


def run(opts: Options, runs_dir: Path | None = None):
    runs_dir = runs_dir or RUNS_DIR
    records, files = measured_records(runs_dir)
    csv_path, png = opts.out / f"{NAME}.csv", opts.out / f"{NAME}.png"
    if records:
        from mok_model.records import model_records
        records, left_out = model_records(records)
    if not records:
        return _no_runs(opts, runs_dir, files)

    from calibration.fit import predict_records
    from calibration.validate import evaluate, plot

    presets = sorted({r["hardware"]["preset"] for r in records})
    predicted = np.full(len(records), math.nan)
    notes = []
    in_sample = False
    for hw in presets:
        ix = [i for i, r in enumerate(records) if r["hardware"]["preset"] == hw]
        params, note = params_for(hw)
        notes.append(note)
        fitted = {Path(f).name for f in params.fitted_on}
        in_sample |= bool(fitted & {Path(f).name for f in files})
        predicted[ix] = predict_records([records[i] for i in ix], params, opts.engine)
    ok = np.isfinite(predicted)
    recs = [r for r, k in zip(records, ok) if k]
    v = evaluate(recs, [r["latency_ms"]["median"] for r in recs], predicted[ok])
    rows = [{**row, "system": r["system"], "hardware": r["hardware"]["preset"], "ep": r["ep"], "tokens": r["tokens"],
             "pass": r["pass"], **{k: r["config"].get(k, "") for k in ("minibatch", "comm_sms", "dispatch", "combine")}}
            for row, r in zip(v.rows, recs)]
    write_csv(csv_path, rows)
    plot(recs, v, str(png))
    reg = regret_table(recs, predicted[ok])
    write_csv(opts.out / f"{NAME}-regret.csv", reg or [{"note": "no workload with >= 2 measured MoK configs"}])
    rho = "n/a" if v.spearman is None else f"{v.spearman:.3f}"
    head = {"records": v.n, "MAPE": f"{100 * v.mape:.1f}%", "max APE": f"{100 * v.max_ape:.1f}%",
            "Spearman (mean over workloads)": rho,
            "regret (mean, max)": (f"{np.mean([r['regret_pct'] for r in reg]):.1f}%, "
                                   f"{max(r['regret_pct'] for r in reg):.1f}%") if reg else "n/a"}
    sections = [
        ("Data", f"{v.n} measured records from {len(files)} file(s): " + ", ".join(f"`{Path(f).name}`" for f in files)
         + f". Hardware presets: {', '.join(presets)}." + "".join(f" Note: {n}." for n in left_out)),
        ("Headline", f"MAPE **{100 * v.mape:.1f}%**, max APE {100 * v.max_ape:.1f}%, Spearman {rho} over "
                     f"{v.groups} workload(s) with >= 3 configurations. Tuner regret (mean, max): "
                     f"{head['regret (mean, max)']}."),
        ("Regret", "For each workload the model picks the measured configuration it predicts fastest; regret = its "
                   "measured latency / the fastest measured - 1.\n\n"
         + (md_table(reg, ["hardware", "model", "ep", "tokens", "pass", "precision", "configs", "best_measured_ms",
                           "model_pick_measured_ms", "regret_pct"])
            if reg else "No workload has two or more measured MoK configurations.")),
        ("Assumptions behind the numbers", "- Measured latencies are the records' medians; predictions use the "
         "parameters below. " + ("They were fitted on some of these run files, so these errors are partly "
                                 "in-sample; `mok calibrate --holdout-by KEY` reports held-out error."
                                 if in_sample else "They were not fitted on these run files: the errors are "
                                 "out-of-sample.") + "\n- " + "\n- ".join(notes) + "."),
    ]
    write_summary(opts.out / "summary.md", TITLE, sections, opts, png.name,
                  "Measured = the records' medians; predicted = the model with the parameters named below.")
    return outputs(opts, NAME, rows, head)


def _no_runs(opts: Options, runs_dir: Path, files: list[str]):
    """Empty outputs and a summary that says there is nothing measured to compare with."""
    csv_path, png = opts.out / f"{NAME}.csv", opts.out / f"{NAME}.png"
    atomic_write_text(csv_path, "id,measured_ms,predicted_ms,ape\n")
    fig, ax = new_figure(1)
    ax[0, 0].text(0.5, 0.5, f"No measured runs yet\n({runs_dir.name}/*.jsonl: {len(files)} file(s))",
                  ha="center", va="center", fontsize=14, transform=ax[0, 0].transAxes)
    ax[0, 0].set(xlabel="measured latency (ms)", ylabel="predicted latency (ms)", xticks=[], yticks=[])
    save_figure(fig, png)
    why = ("the folder does not exist" if not runs_dir.is_dir() else
           "it holds no *.jsonl files" if not files else "its files hold no measured MoE-layer records")
    sections = [("No measured runs available",
                 f"`{runs_dir}`: {why}. There is nothing to validate against, so this study reports no error, "
                 "Spearman or regret numbers (none are invented). Run `mok bench ... --out "
                 "calibration/runs/h200/RUNS.jsonl` on an H200 machine, then run this study again.")]
    write_summary(opts.out / "summary.md", TITLE, sections, opts, png.name, "No numbers: nothing was measured.")
    return outputs(opts, NAME, [], {"measured records": 0, "status": "no measured runs available"})
