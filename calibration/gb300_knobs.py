"""The published GB300 NVL72 rows at the published default knobs and at the tuner's knobs, in
sample and leave-one-out, analytic and simulator engines.

    python -m calibration.gb300_knobs [RUN_FILE] [--params FILE] [--fit-knobs tuned|default]
                                      [--prior NAME=PARAMS_FILE ...] [--no-sim] [--json]

The Table 1 records carry no knobs (the publication does not give them), so the fit and
`mok validate` score their MoK rows at the tuner's choice. This report scores each MoK row also
at the published default knobs (mok_model.scenario.default_config, from mok-system.md section 3:
pull dispatch and push combine in both passes, 40 comm SMs forward and 28 backward of 148,
minibatch 4096 routed rows, macrobatch 131072, schedule capacity 0.5). Baseline rows
(nccl-torch) have no knobs: they read the same in both columns.

- in sample: the parameters file (default: the shipped mok_model/params/gb300-nvl72.json,
  fitted to these rows with the tuner choosing the MoK rows' knobs);
- leave-one-out: each row predicted by a fit to the others (calibration/loo.py: the
  Blackwell priors, `mok calibrate`'s free parameters for the remaining rows), at both knob sets.

`--fit-knobs default` reads the records the other way: the MoK rows as run at the published
default knobs (each MoK record given default_config's knobs before it is fitted), in sample a
fit to all rows from the Blackwell priors with the shipped file's free parameters
(calibration.defaults.FREE), leave-one-out as above. Which reading is right is not published.

`--prior NAME=PARAMS_FILE` (repeatable) starts every fit from the Blackwell priors with NAME's
prior taken from another parameters file (its value and source, e.g. sm_scaling as fitted on the
real 2-H200 runs in mok_model/params/h200-hgx8.json): a mechanism measured elsewhere, held (not
fitted on these rows). The in-sample column is then a fit to every row from those priors (FREE),
at the reading `--fit-knobs` names, instead of the shipped file.

The simulator is not fitted (too slow for ten fits on two cores): its columns use the analytic
engine's fitted parameters and the same knobs (tuned: the analytic tuner's choice).
"""

from __future__ import annotations

import argparse
import copy
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


def at_default_knobs(records: list[dict]) -> list[dict]:
    """Copies of the records, each MoK record given the published default knobs."""
    out = []
    for rec in records:
        rec = copy.deepcopy(rec)
        if rec["system"] == "mok":
            rec["config"] = default_config(record_scenario(rec)).as_dict()
        out.append(rec)
    return out


def priors_with(hardware: str, prior_from: dict[str, str] | None = None) -> Params:
    """The fits' priors for `hardware`, each parameter named in `prior_from` taken from that
    parameters file instead (value, and a source naming the file and its own source)."""
    base = priors_for(hardware)
    if not prior_from:
        return base
    values, sources = dict(base.values), dict(base.sources)
    for name, path in prior_from.items():
        other = read_params_as(path, f"--prior {name}")
        if name not in values:
            raise MokInputError(f"--prior {name}: not a parameter (known: {sorted(values)})")
        values[name] = other[name]
        sources[name] = (f"held from {path} ({other.hardware}): "
                         f"{other.sources.get(name, 'no source')}")
    return Params(values, hardware, None, [], sources)


def leave_one_out(records: list[dict], engines: tuple[str, ...],
                  free: list[str] | None = None, fit_knobs: str = "tuned",
                  priors: Params | None = None, held: frozenset = frozenset()) -> list[dict]:
    """calibration.loo's fits (each row left out in turn), each held-out row scored at both
    knob sets. fit_knobs "default": the training rows are fitted at the published defaults.
    `priors`: the fits' starting values (default: priors_for the records' hardware); `held`:
    parameters never fitted (taken from another file: --prior)."""
    records = [r for r in records if predictable(r)]
    fitted_as = at_default_knobs(records) if fit_knobs == "default" else records
    rows = []
    for i, rec in enumerate(records):
        train = fitted_as[:i] + fitted_as[i + 1:]
        names = [n for n in (free if free is not None else default_free(train, set()))
                 if n not in held]
        res = fit(train, priors if priors is not None else priors_for(rec["hardware"]["preset"]),
                  names)
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


def report(runs: list[str], params_file: Path | None, engines: tuple[str, ...],
           fit_knobs: str = "tuned", prior_from: dict[str, str] | None = None) -> dict:
    """The in-sample and leave-one-out tables. fit_knobs "default" or `prior_from` given
    (params_file None): the in-sample parameters are a fit to every row (FREE) at that reading
    from the priors (priors_with)."""
    records = read_records(runs)
    priors = priors_with(records[0]["hardware"]["preset"], prior_from)
    if fit_knobs == "default" or prior_from:
        train = at_default_knobs(records) if fit_knobs == "default" else records
        free = [n for n in FREE if n not in (prior_from or {})]
        res = fit(train, priors, free)
        params, where = res.params, (f"fit to every row at the {fit_knobs} knobs, free "
                                     f"{', '.join(f'{n} {res.params[n]:.4g}' for n in free)}")
        if prior_from:
            where += "; held: " + ", ".join(f"{n} {priors[n]:.4g} from {f}"
                                            for n, f in prior_from.items())
    else:
        params, where = read_params_as(params_file, "--params"), str(params_file)
    ins = in_sample(records, params, engines)
    loo = leave_one_out(records, engines, fit_knobs=fit_knobs,
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
    print(f"published rows: {', '.join(doc['runs'])}; {doc['note']}; fitted with the MoK rows "
          f"at the {doc['fit_knobs']} knobs")
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
                   "mok_model/params/gb300-nvl72.json; with --fit-knobs tuned and no --prior)")
    p.add_argument("--fit-knobs", choices=("tuned", "default"), default="tuned",
                   help="the knobs the fits score the MoK rows at (default: the tuner's, as the "
                        "shipped file and calibration.loo; 'default': the published defaults)")
    p.add_argument("--prior", action="append", default=[], metavar="NAME=PARAMS_FILE",
                   help="hold NAME at its value in another parameters file in every fit "
                        "(repeatable), e.g. sm_scaling=mok_model/params/h200-hgx8.json")
    p.add_argument("--no-sim", action="store_true", help="analytic engine only")
    p.add_argument("--json", action="store_true")
    try:
        a = p.parse_args(argv)
        engines = ("analytic",) if a.no_sim else ("analytic", "sim")
        prior_from = {}
        for item in a.prior:
            name, sep, path = item.partition("=")
            if not sep or not name or not path:
                raise MokInputError(f"--prior {item!r} must be NAME=PARAMS_FILE")
            prior_from[name] = path
        in_sample_file = a.fit_knobs == "tuned" and not prior_from
        if a.params is not None and not in_sample_file:
            fit = f"--fit-knobs {a.fit_knobs}" + (", --prior" if prior_from else "")
            raise MokInputError(f"--params {a.params!r}: the in-sample column is then a fit "
                                f"({fit}), not a file; drop --params")
        if a.params is not None:
            read_params_as(a.params, "--params")     # a bad file named before the fits
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
