"""Held-out report of the backward megakernel's and the FP8 forward's terms (issue 14 point 4).

    python -m calibration.report_passes [RUN_FILES...] [--params FILE] [--old] [--sim] [--json]

RUN_FILES default to calibration/runs/h200/*.jsonl[.gz]. For each group ("bwd": backward MoK records,
"bwd-train": those on the layer's training tiles, "fp8": FP8 forward MoK records; default kernel
variants only, the training tiles for bwd-train, calibration/passes.py), the group's
free parameters (passes.PASS_FREE) are refitted leaving out each model in turn and each token
count in turn, every other value held at the parameters file's (default: the shipped
mok_model/params/h200-1.json, whose forward values were fitted to the BF16 forward sweeps only);
the held-out records are predicted by the fit that did not see them. Printed per group and key:
records, MAPE, max error, mean signed error, Spearman over the held-out records, and each fold.
Then the fit to every record with the mean signed error by each varied value, the BF16 forward
MoK records of the same runs (the forward's terms, not refitted here) and, with --sim, the
simulator's figures with the same fitted values. Zipf records whose popularity order the model
cannot draw are skipped (records.routing_reproduced). --old studies the records of
the variants that were the defaults before 2026-12-01 instead. The predictions registered before
the runs: `python -m calibration.registered` (docs/calibration.md).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np

from mok_model.cli import MokParser
from mok_model.errors import MokInputError
from mok_model.params import Params, load_params
from mok_model.records import in_id_order, read_records, record_files, routing_reproduced

from .checks import params_file
from .passes import GROUPS, PASS_FREE, record_value, fit_passes, held_out, pass_group, pass_records
from .scoring import predict_records
from .validate import spearman

RUNS = Path(__file__).parent / "runs" / "h200"
KEYS = ("model", "tokens")
GOAL = 0.08  # held-out MAPE goal (issue 14 point 4)


def _metrics(meas, pred) -> dict:
    meas, pred = np.asarray(meas, float), np.asarray(pred, float)
    if not len(meas):
        return {"n": 0}
    err = pred / meas - 1.0
    return {"n": int(len(meas)), "mape": float(np.abs(err).mean()),
            "max_ape": float(np.abs(err).max()), "signed": float(err.mean()),
            "spearman": spearman(meas, pred)}


def report(records: list[dict], base: Params, old: bool = False, sim: bool = False,
           keys: tuple[str, ...] = KEYS) -> dict:
    """Every figure of the report as one document (printed by `render`)."""
    groups, notes = pass_records(records, old)
    doc: dict = {"notes": notes, "counts": {g: len(groups[g]) for g in GROUPS},
                 "free": PASS_FREE, "held_out": {}, "all": {}, "sim": {}}
    full = fit_passes(records, base, old=old)
    for g in GROUPS:
        recs = groups[g]
        if not recs:
            continue
        rows = full.residuals[g]
        doc["all"][g] = {"fitted": {f: full.params[f] for f in full.fitted[g]},
                         **_metrics([r["measured_ms"] for r in rows], [r["predicted_ms"] for r in rows])}
        # where the form misses: mean signed error of the fit to all, by each varied value
        err = {r["id"]: r["rel_error"] for r in rows}
        bias = {}
        for key in ("model", "tokens", "routing", "comm_sms", "minibatch"):
            by: dict = {}
            for r in recs:
                if r["id"] in err:  # the fit's records (passes.FIT_HELD_OUT's are not)
                    by.setdefault(str(record_value(r, key)), []).append(err[r["id"]])
            if len(by) > 1:
                bias[key] = {v: float(np.mean(e)) for v, e in sorted(by.items())}
        doc["all"][g]["bias"] = bias
        doc["held_out"][g] = {}
        for key in keys:
            try:
                h = held_out(records, base, g, key, old=old)
            except MokInputError as exc:
                doc["held_out"][g][key] = {"skipped": str(exc)}
                continue
            doc["held_out"][g][key] = {"n": h.n, "mape": h.mape, "max_ape": h.max_ape,
                                       "signed": h.signed, "spearman": h.spearman,
                                       "folds": h.folds, "rows": h.rows}
        if sim:
            meas = [r["latency_ms"]["median"] for r in recs]
            ana = predict_records(recs, full.params)
            sm = predict_records(recs, full.params, "sim")
            doc["sim"][g] = {**_metrics(meas, sm),
                             "vs_analytic_max": float(np.max(np.abs(sm / ana - 1.0)))}
    # the BF16 forward MoK records of the same runs (the FP8 grids time both), predicted with the
    # parameters as given: their terms are the forward fit's, not refitted here
    bf16 = [r for r in records if r["system"] == "mok" and r["pass"] == "fwd"
            and r["precision"] == "bf16" and routing_reproduced(r)]
    if bf16:
        bpred = predict_records(bf16, base)
        doc["bf16_fwd"] = _metrics([r["latency_ms"]["median"] for r in bf16], bpred)
        # does a group's error follow the BF16 forward's on the same workload and knobs? (the
        # terms they share: gemm_eff, sm_scaling, tile counts, the pipeline)
        # (a workload and knobs timed more than once: the mean of its errors, not the last one's)
        errs: dict[tuple, list[float]] = {}
        for r, q in zip(bf16, bpred):
            errs.setdefault((r["model"], r["tokens"], record_value(r, "routing"),
                             json.dumps(r["config"], sort_keys=True)), []).append(
                q / r["latency_ms"]["median"] - 1.0)
        same = {k: float(np.mean(v)) for k, v in errs.items()}
        for g in doc["all"]:
            byid = {r["id"]: r for r in groups[g]}
            pairs = [(same[k], row["rel_error"]) for row in full.residuals[g]
                     if (k := (byid[row["id"]]["model"], byid[row["id"]]["tokens"],
                               record_value(byid[row["id"]], "routing"),
                               json.dumps(byid[row["id"]]["config"], sort_keys=True))) in same]
            if len(pairs) >= 3:
                a, b = np.array(pairs).T
                doc["all"][g]["vs_bf16_fwd"] = {"n": len(pairs),
                                                "pearson": float(np.corrcoef(a, b)[0, 1])}
    return doc


def _pct(x) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:.1f}%"


def _rho(x) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.3f}"


def render(doc: dict, out=sys.stdout) -> None:
    """The report as text (Markdown tables)."""
    w = lambda s="": print(s, file=out)  # noqa: E731
    for n in doc["notes"]:
        w(f"note: {n}")
    w(f"records per group (default variants): {doc['counts']}")
    w()
    w("| group | held out | n | MAPE | max | mean signed | Spearman |")
    w("|---|---|---:|---:|---:|---:|---:|")
    for g, by in doc["held_out"].items():
        for key, h in by.items():
            if "skipped" in h:
                w(f"| {g} | each {key} | - | - | - | - | - |  ({h['skipped']})")
                continue
            w(f"| {g} | each {key} | {h['n']} | {_pct(h['mape'])} | {_pct(h['max_ape'])} | "
              f"{100 * h['signed']:+.1f}% | {_rho(h['spearman'])} |")
    for g, a in doc["all"].items():
        w(f"| {g} | none (fit to all) | {a['n']} | {_pct(a['mape'])} | {_pct(a['max_ape'])} | "
          f"{100 * a['signed']:+.1f}% | {_rho(a['spearman'])} |")
    w()
    for g, by in doc["held_out"].items():
        for key, h in by.items():
            for f in h.get("folds", []):
                fitted = ", ".join(f"{k} {v:.4g}" for k, v in f["fitted"].items())
                w(f"{g} without {key}={f['value']}: n {f['n']}, MAPE {_pct(f['mape'])}, max "
                  f"{_pct(f['max_ape'])} (fitted on the rest: {fitted})")
    for g, a in doc["all"].items():
        w(f"{g} fit to all: " + ", ".join(f"{k} {v:.4g}" for k, v in a["fitted"].items()))
        if "vs_bf16_fwd" in a:
            c = a["vs_bf16_fwd"]
            w(f"  its errors against the BF16 forward's on the same {c['n']} workloads and knobs: "
              f"Pearson {c['pearson']:.2f}")
        for key, by in a.get("bias", {}).items():
            w(f"  mean signed error by {key}: " + ", ".join(f"{v} {100 * e:+.1f}%" for v, e in by.items()))
    if doc.get("bf16_fwd"):
        b = doc["bf16_fwd"]
        w(f"BF16 forward MoK records of the same runs (parameters as given, not refitted): n "
          f"{b['n']}, MAPE {_pct(b['mape'])}, max {_pct(b['max_ape'])}, mean signed "
          f"{100 * b['signed']:+.1f}%")
    for g, s in doc["sim"].items():
        w(f"{g} simulator with the fit to all: n {s['n']}, MAPE {_pct(s['mape'])}, max "
          f"{_pct(s['max_ape'])}; largest simulator/analytic gap {_pct(s['vs_analytic_max'])}")
    worst = [h["mape"] for by in doc["held_out"].values() for h in by.values() if "mape" in h]
    if worst:
        verdict = "met" if max(worst) <= GOAL else "NOT met"
        over = [f"{g} without {key}={f['value']} {_pct(f['mape'])}" for g, by in doc["held_out"].items()
                for key, h in by.items() for f in h.get("folds", []) if f["mape"] > GOAL]
        w(f"goal: held-out MAPE <= {100 * GOAL:.0f}%, pooled per group and hold-out: {verdict} "
          f"(worst {_pct(max(worst))}); folds over it: {', '.join(over) or 'none'}")


def main(argv: list[str] | None = None) -> int:
    p = MokParser(prog="python -m calibration.report_passes", description=__doc__,
                  formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("runs", nargs="*", help="run-record files (default calibration/runs/h200/*.jsonl[.gz])")
    p.add_argument("--params", help="parameters file holding the forward values "
                                    "(default the shipped h200-1)")
    p.add_argument("--old", action="store_true",
                   help="the variants that were the defaults before 2026-12-01")
    p.add_argument("--sim", action="store_true", help="also the simulator, with the fit to all")
    p.add_argument("--json", action="store_true", help="one JSON document on stdout")
    try:
        a = p.parse_args(argv)
        base = params_file(a.params, "--params") if a.params is not None \
            else load_params(None, "h200-1")
        files = a.runs or [str(f) for f in record_files(RUNS)]
        # one canonical order (the records' ids): the folds' fits do not follow the files' order
        records = in_id_order(read_records(files))
        # the pass records, and the BF16 forward MoK records of the files that hold FP8 ones
        fp8_files = {r["_file"] for r in records if pass_group(r) == "fp8"}
        records = [r for r in records if pass_group(r) or (
            r["system"] == "mok" and r["pass"] == "fwd" and r["_file"] in fp8_files)]
        if not any(pass_group(r) for r in records):
            raise MokInputError(f"no backward or FP8 MoK records in {', '.join(files)} (the "
                                f"report's groups: {', '.join(GROUPS)})")
        other = sorted({r["hardware"]["preset"] for r in records} - {base.hardware})
        if other:
            raise MokInputError(f"records of {', '.join(other)} with parameters fitted for "
                                f"{base.hardware}: give --params of their hardware")
        doc = report(records, base, a.old, a.sim)
    except MokInputError as exc:
        print(f"{p.prog}: error: {exc}", file=sys.stderr)
        return 2
    if a.json:
        print(json.dumps(doc, default=float))
    else:
        render(doc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
