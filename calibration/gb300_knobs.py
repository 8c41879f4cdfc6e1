"""The published GB300 NVL72 rows at the published default knobs and at the tuner's knobs, in
sample and leave-one-out, analytic and simulator engines.

    python -m calibration.gb300_knobs [RUN_FILE] [--params FILE]
                                      [--fit-knobs both|tuned|default]
                                      [--prior NAME=PARAMS_FILE ... | --no-held] [--no-sim] [--json]

The Table 1 records carry no knobs (the publication does not give them), so `mok validate`
scores their MoK rows at the tuner's choice. This report scores each MoK row also
at the published default knobs (mok_model.scenario.default_config, from mok-system.md section 3:
pull dispatch and push combine in both passes, 40 comm SMs forward and 28 backward of 148,
minibatch 4096 routed rows, macrobatch 131072, schedule capacity 0.5). Baseline rows
(nccl-torch) have no knobs: they read the same in both columns.

- in sample: the parameters file (default: the shipped mok_model/params/gb300-nvl72.json, fitted
  as calibration/gb300_fit.py says: every MoK row read both ways, at the tuner's knobs and at the
  published defaults, half a row's weight each; sm_scaling held from h200-hgx8.json);
- leave-one-out: each row (both its readings) predicted by a fit to the others, from the same
  priors with the same free parameters (calibration.defaults.FREE), at both knob sets.

`--fit-knobs tuned` or `default` reads the records one way only (before session 31 the shipped
file was the tuned reading): the MoK rows at the tuner's knobs, or as run at the published
default knobs (each MoK record given default_config's knobs before it is fitted); the in-sample
column is then a fit to all rows at that reading (FREE; leave-one-out: `mok calibrate`'s free
parameters for the remaining rows, as calibration/loo.py). Which reading is right is not
published.

Held parameters: by default those of calibration.gb300_fit.HELD (sm_scaling from
h200-hgx8.json), as the shipped file; `--no-held` starts every fit from the Blackwell priors
alone (sm_scaling 1, as before session 31); `--prior NAME=PARAMS_FILE` (repeatable, instead of
the default) holds NAME at its value in another parameters file (its value and source): a
mechanism measured elsewhere, not fitted on these rows. Any reading or held set other than the
shipped recipe makes the in-sample column a fit to every row (FREE) instead of the shipped file.

The simulator is not fitted (too slow for ten fits on two cores): its columns use the analytic
engine's fitted parameters and the same knobs (tuned: the analytic tuner's choice).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from mok_model.cli import MokParser
from mok_model.errors import MokInputError
from mok_model.params import PARAMS_DIR, Params
from mok_model.predict import predict
from mok_model.records import predictable, read_records, record_scenario
from mok_model.scenario import Config, default_config

from .cli import default_free, priors_for
from .checks import params_file as read_params_as
from .defaults import FREE
from .fit import fit, predict_records, resolve_configs
from .gb300_fit import HELD, at_default_knobs, both_readings, held_priors  # noqa: F401  (re-exported)

PUBLISHED = Path(__file__).parent / "runs" / "published" / "gb300_table1.jsonl"
SHIPPED = PARAMS_DIR / "gb300-nvl72.json"
COLUMNS = ("default", "tuned")


def knob_text(cfg: Config | None) -> str:
    if cfg is None:
        return "-"
    return (f"{cfg.dispatch}/{cfg.combine} mb={cfg.minibatch} comm={cfg.comm_sms} "
            f"macro={cfg.macrobatch} cap={cfg.capacity:g}")


def score(rec: dict, params: Params, engines: tuple[str, ...]) -> dict:
    """One record at the published default knobs and at the tuner's (MoK), or as it is (a
    baseline: no knobs), under `params`: predicted ms per (knobs, engine) and the knobs used."""
    scn = record_scenario(rec)
    meas = rec["latency_ms"]["median"]
    out = {"id": rec["id"], "system": rec["system"], "measured_ms": meas, "knobs": {}, "pred": {}}
    if rec["system"] == "mok":
        cfgs = {"default": default_config(scn), "tuned": resolve_configs([rec], params)[0]}
    else:
        cfgs = {"default": None, "tuned": None}
    for col, cfg in cfgs.items():
        out["knobs"][col] = knob_text(cfg)
        for eng in engines:
            if cfg is None and eng == "analytic":
                ms = float(predict_records([rec], params)[0])
            else:
                ms = predict(scn, cfg, rec["system"], params, eng).latency_ms
            out["pred"][f"{col}/{eng}"] = ms
    out["err"] = {k: v / meas - 1.0 for k, v in out["pred"].items()}
    return out


def in_sample(records: list[dict], params: Params, engines: tuple[str, ...]) -> list[dict]:
    return [score(r, params, engines) for r in records if predictable(r)]


def priors_with(hardware: str, prior_from: dict[str, str] | None = None) -> Params:
    """The fits' priors for `hardware`, each parameter named in `prior_from` taken from that
    parameters file instead (gb300_fit.held_priors; none held where it is empty)."""
    return held_priors(hardware, prior_from or {}, "--prior")


def training(records: list[dict], fit_knobs: str) -> tuple[list[dict], list[float] | None]:
    """(records, weights) a fit reads at `fit_knobs`: "tuned" as published (knobs open),
    "default" at the published defaults, "both" (gb300_fit.both_readings) each MoK row both
    ways at half weight."""
    if fit_knobs == "both":
        return both_readings(records)
    return (at_default_knobs(records) if fit_knobs == "default" else records), None


def leave_one_out(records: list[dict], engines: tuple[str, ...],
                  free: list[str] | None = None, fit_knobs: str = "tuned",
                  priors: Params | None = None, held: frozenset = frozenset()) -> list[dict]:
    """calibration.loo's fits (each row left out in turn), each held-out row scored at both
    knob sets. fit_knobs "default": the training rows are fitted at the published defaults;
    "both": each MoK training row at both (gb300_fit.both_readings). `priors`: the fits'
    starting values (default: priors_for the records' hardware); `held`: parameters never
    fitted (taken from another file: --prior)."""
    records = [r for r in records if predictable(r)]
    rows = []
    for i, rec in enumerate(records):
        train, weights = training(records[:i] + records[i + 1:], fit_knobs)
        names = [n for n in (free if free is not None else default_free(train, set()))
                 if n not in held]
        res = fit(train, priors if priors is not None else priors_for(rec["hardware"]["preset"]),
                  names, weights=weights)
        row = score(rec, res.params, engines)
        row["fitted"] = {n: res.params[n] for n in names}
        rows.append(row)
    return rows


def summary(rows: list[dict]) -> dict:
    """MAPE and max absolute error per column, over all rows, MoK rows and baseline rows."""
    out = {}
    for group, sel in (("all", rows), ("mok", [r for r in rows if r["system"] == "mok"]),
                       ("baselines", [r for r in rows if r["system"] != "mok"])):
        if not sel:
            continue
        out[group] = {}
        for key in sel[0]["err"]:
            e = np.abs([r["err"][key] for r in sel])
            out[group][key] = {"n": len(sel), "mape": float(e.mean()), "max_ape": float(e.max()),
                               "within_10pct": int((e <= 0.10).sum())}
    return out


def shipped_recipe(fit_knobs: str, prior_from: dict[str, str] | None) -> bool:
    """Whether a reading and held set are the shipped file's (calibration/gb300_fit.py)."""
    return fit_knobs == "both" and {k: str(v) for k, v in (prior_from or {}).items()} == \
        {k: str(v) for k, v in HELD.items()}


def report(runs: list[str], params_file: Path | None, engines: tuple[str, ...],
           fit_knobs: str = "tuned", prior_from: dict[str, str] | None = None) -> dict:
    """The in-sample and leave-one-out tables. params_file None: the in-sample parameters are a
    fit to every row (FREE) at the reading `fit_knobs` from the priors (priors_with), else that
    file. Leave-one-out fits FREE (less the held) at the same reading from the same priors, or,
    with no held parameter and one reading, `mok calibrate`'s free parameters (as before)."""
    records = read_records(runs)
    for rec in records:
        if rec.get("source") != "published" or rec["config"]:
            raise MokInputError(f"record {rec['id']!r}: this report scores published rows, which "
                                f"carry no knobs (source 'published', config {{}}), at the "
                                f"published defaults and the tuner's; a run with knobs is "
                                f"validated as run (`mok validate FILE`)")
    priors = priors_with(records[0]["hardware"]["preset"], prior_from)
    if params_file is None:
        train, weights = training(records, fit_knobs)
        free = [n for n in FREE if n not in (prior_from or {})]
        res = fit(train, priors, free, weights=weights)
        params, where = res.params, (f"fit to every row at the {fit_knobs} knobs, free "
                                     f"{', '.join(f'{n} {res.params[n]:.4g}' for n in free)}")
        if prior_from:
            where += "; held: " + ", ".join(f"{n} {priors[n]:.4g} from {f}"
                                            for n, f in prior_from.items())
    else:
        params, where = read_params_as(params_file, "--params"), str(params_file)
    ins = in_sample(records, params, engines)
    loo_free = [n for n in FREE if n not in (prior_from or {})] \
        if prior_from or fit_knobs == "both" else None
    loo = leave_one_out(records, engines, free=loo_free, fit_knobs=fit_knobs,
                        priors=priors if prior_from else None,
                        held=frozenset(prior_from or {}))
    return {"runs": runs, "params": where, "fit_knobs": fit_knobs, "engines": list(engines),
            "prior_from": dict(prior_from or {}),
            "note": "records carry no knobs (not published): 'tuned' is the tuner's choice under "
                    "the parameters; 'default' the published defaults (default_config)",
            "in_sample": {"rows": ins, "summary": summary(ins)},
            "loo": {"rows": loo, "summary": summary(loo)}}


def print_report(doc: dict) -> None:
    engines = doc["engines"]
    keys = [f"{c}/{e}" for c in COLUMNS for e in engines]
    reading = {"both": "both knob sets (tuned and published defaults, half weight each)",
               "tuned": "the tuner's knobs", "default": "the published default knobs"}
    held = ", ".join(f"{k} from {v}" for k, v in doc["prior_from"].items()) or "nothing"
    print(f"published rows: {', '.join(doc['runs'])}; {doc['note']}; fitted with the MoK rows "
          f"at {reading[doc['fit_knobs']]}; held: {held}")
    for part, title in (("in_sample", f"in sample ({doc['params']})"),
                        ("loo", "leave-one-out (fit to the other rows)")):
        print(f"\n{title}: error of the prediction")
        print(f"  {'row':<34} {'measured':>8}  " + "  ".join(f"{k:>16}" for k in keys))
        for r in doc[part]["rows"]:
            print(f"  {r['id']:<34} {r['measured_ms']:8.3f}  "
                  + "  ".join(f"{100 * r['err'][k]:+15.1f}%" for k in keys))
        for r in doc[part]["rows"]:
            if r["system"] == "mok":
                print(f"    {r['id']:<32} default {r['knobs']['default']}; tuned {r['knobs']['tuned']}")
        for group, cols in doc[part]["summary"].items():
            print(f"  {group:<10} " + "  ".join(
                f"{k} MAPE {100 * s['mape']:.1f}% max {100 * s['max_ape']:.1f}% "
                f"({s['within_10pct']}/{s['n']} within 10%)" for k, s in cols.items()))


def main(argv: list[str] | None = None) -> int:
    p = MokParser(prog="python -m calibration.gb300_knobs", description=__doc__,
                  formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("runs", nargs="*", default=[str(PUBLISHED)])
    p.add_argument("--params", default=None, help="in-sample parameters file (default "
                   "mok_model/params/gb300-nvl72.json; only with the shipped recipe: "
                   "--fit-knobs both and the default held parameters)")
    p.add_argument("--fit-knobs", choices=("both", "tuned", "default"), default="both",
                   help="the knobs the fits score the MoK rows at (default: both, half weight "
                        "each, as the shipped file; 'tuned': the tuner's, as calibration.loo; "
                        "'default': the published defaults)")
    p.add_argument("--prior", action="append", default=[], metavar="NAME=PARAMS_FILE",
                   help="hold NAME at its value in another parameters file in every fit "
                        "(repeatable; replaces the default held set, calibration.gb300_fit.HELD), "
                        "e.g. sm_scaling=mok_model/params/h200-1.json")
    p.add_argument("--no-held", action="store_true",
                   help="hold nothing: every fit from the Blackwell priors alone (sm_scaling 1, "
                        "the recipe before session 31)")
    p.add_argument("--no-sim", action="store_true", help="analytic engine only")
    p.add_argument("--json", action="store_true")
    try:
        a = p.parse_args(argv)
        engines = ("analytic",) if a.no_sim else ("analytic", "sim")
        if a.no_held and a.prior:
            raise MokInputError("--no-held and --prior: give one (--prior replaces the default "
                                "held set; --no-held holds nothing)")
        prior_from = {} if a.no_held or a.prior else {k: str(v) for k, v in HELD.items()}
        for item in a.prior:
            name, sep, path = item.partition("=")
            if not sep or not name or not path:
                raise MokInputError(f"--prior {item!r} must be NAME=PARAMS_FILE")
            if name in prior_from:  # --prior replaces the held set: only a repeat is here
                raise MokInputError(f"--prior names {name} twice; give each parameter once")
            prior_from[name] = path
        in_sample_file = shipped_recipe(a.fit_knobs, prior_from)
        if a.params is not None and not in_sample_file:
            fit = f"--fit-knobs {a.fit_knobs}" + (", --prior" if a.prior else "") + \
                (", --no-held" if a.no_held else "")
            raise MokInputError(f"--params {a.params!r}: the in-sample column is then a fit "
                                f"({fit}), not a file; drop --params")
        if a.params is not None:     # a bad file named before the fits
            if (hw := read_params_as(a.params, "--params").hardware) != "gb300-nvl72":
                raise MokInputError(f"--params {a.params!r} is fitted for {hw}; the published "
                                    f"rows are gb300-nvl72's: give its parameters file")
        for name, path in prior_from.items():
            read_params_as(path, f"--prior {name}")
        doc = report(a.runs, Path(a.params if a.params is not None else SHIPPED)
                     if in_sample_file else None, engines, a.fit_knobs, prior_from)
    except MokInputError as exc:
        print(f"{p.prog}: error: {exc}", file=sys.stderr)
        return 2
    if a.json:
        print(json.dumps(doc, indent=1))
    else:
        print_report(doc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
