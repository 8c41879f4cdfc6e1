"""Tuner regret on hardware: for each workload with a measured knob sweep, pick the config the
model predicts fastest among exactly the measured configs, and report how much slower it measured
than the best measured config; the published default config's regret beside it.

    python -m calibration.regret [RUN_FILES...] [--params FILE | --refit-by tokens|model [--free P,..]]
                                 [--min-configs N] [--engine analytic|sim] [--json]

--params scores with one parameters file (the hardware's shipped one by default). --refit-by KEY
is the honest variant: each workload is scored with parameters fitted (`mok calibrate`'s stages,
from priors) on the records of the other KEY groups only, so the model never saw it.
Nothing is invented: without sweeps in the records the script says so and exits 0.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np

from mok_model.cli import doc_parser, int_at_least, run_tool
from mok_model.errors import MokInputError
from mok_model.params import Params, load_params, read_params
from mok_model.records import predictable, read_records, record_files, superseded_kernel
from mok_model.scenario import ENGINES, Config, default_config
from mok_model.tuner import tune

from .checks import param_names
from .cli import default_free, priors_for
from .fit import fit, predict_records, record_config, record_scenario, workload_key
from .micro import fit_micro
from .split import check_key, group_value

H200_RUNS = Path(__file__).parent / "runs" / "h200"


def _distance(a: Config, b: Config) -> float:
    """How far two configs are: 1 per differing mode, |log2 ratio| per numeric knob."""
    d = float(a.dispatch != b.dispatch) + float(a.combine != b.combine)
    for k in ("minibatch", "comm_sms", "macrobatch", "capacity"):
        d += abs(math.log2(getattr(a, k) / getattr(b, k)))
    return d


def sweeps(records: list[dict], min_configs: int) -> dict[tuple, list[dict]]:
    """Measured MoK records with full configs that the model predicts (records.predictable: not
    a routing it cannot draw, e.g. hot records from before the model's draw, whose every
    prediction would be nan), grouped by workload; only groups with at least `min_configs`
    distinct configs count as a sweep. A sweep compares configs of one kernel: the push/push
    records of the kernel with runtime mode words and the pull-combine records of the dn_blocks
    kernel's first form (records.superseded_kernel), whose other configs ran as today's, are left
    out."""
    groups: dict[tuple, list[dict]] = {}
    for r in records:
        if r["system"] == "mok" and r["source"] == "measured" and predictable(r) \
                and not superseded_kernel(r) and isinstance(record_config(r), Config):
            groups.setdefault(workload_key(r), []).append(r)
    return {k: v for k, v in groups.items()
            if len({record_config(r) for r in v}) >= min_configs}


def workload_regret(recs: list[dict], params: Params, engine: str = "analytic") -> dict:
    """Regret of the predicted-best measured config and of the default config for one workload."""
    by_cfg: dict[Config, list[dict]] = {}
    for r in recs:
        by_cfg.setdefault(record_config(r), []).append(r)
    cfgs = list(by_cfg)
    measured = np.array([np.median([r["latency_ms"]["median"] for r in by_cfg[c]]) for c in cfgs])
    reps = [by_cfg[c][0] for c in cfgs]
    pred = predict_records(reps, params, engine)
    best = int(np.argmin(measured))
    chosen = int(np.nanargmin(pred))
    scn = record_scenario(recs[0])
    dflt = default_config(scn)
    near = min(range(len(cfgs)), key=lambda i: (_distance(cfgs[i], dflt), i))
    rank = {i: j for j, i in enumerate(np.argsort(measured, kind="stable"))}
    # for information: the tuner over its own full grid, and the measured config nearest to it
    free = tune(scn, params, top=1).best.config if engine == "analytic" else None
    near_free = min(range(len(cfgs)), key=lambda i: (_distance(cfgs[i], free), i)) if free else None
    return {
        "workload": scn.describe(), "configs": len(cfgs), "records": len(recs),
        "best_measured": {"config": cfgs[best].as_dict(), "measured_ms": float(measured[best])},
        "tuned": {"config": cfgs[chosen].as_dict(), "measured_ms": float(measured[chosen]),
                  "predicted_ms": float(pred[chosen]), "measured_rank": rank[chosen] + 1,
                  "regret": float(measured[chosen] / measured[best] - 1)},
        "default": {"config": cfgs[near].as_dict(), "exact": _distance(cfgs[near], dflt) == 0,
                    "published_default": dflt.as_dict(), "measured_ms": float(measured[near]),
                    "regret": float(measured[near] / measured[best] - 1)},
        "worst_over_best": float(measured.max() / measured[best]),
        "tuner_full_grid": None if free is None else {
            "config": free.as_dict(), "in_measured_grid": _distance(cfgs[near_free], free) == 0,
            "nearest_measured": cfgs[near_free].as_dict(),
            "nearest_regret": float(measured[near_free] / measured[best] - 1)},
    }


def refit_params(train: list[dict], hardware: str, free: list[str] | None = None) -> Params:
    """`mok calibrate`'s two stages from priors on the given records."""
    micro = fit_micro(train, priors_for(hardware))
    layer = [r for r in train if r["system"] == "mok"]
    return fit(layer, micro.params, free or default_free(layer, set(micro.fitted))).params


def main(argv: list[str] | None = None) -> int:
    p = doc_parser("python -m calibration.regret", __doc__)
    p.add_argument("runs", nargs="*", help="run-record files (default: calibration/runs/h200/*.jsonl[.gz])")
    p.add_argument("--params", default=None, help="parameters file (default: the hardware's own)")
    p.add_argument("--refit-by", default=None, help="score each workload with a fit that held "
                   "out its group of this key (tokens, model, ...)")
    p.add_argument("--free", default=None, help="with --refit-by: stage-2 parameters to fit "
                   "(default: mok calibrate's choice)")
    p.add_argument("--min-configs", type=int_at_least(2), default=8, help="configs that make a sweep")
    p.add_argument("--engine", default="analytic")
    p.add_argument("--allow-params-mismatch", action="store_true")
    p.add_argument("--json", action="store_true")
    return run_tool(p, _run, argv)


def _check_flags(a: argparse.Namespace) -> None:
    """Every flag checked before any record is read (some are used only once a sweep is found)."""
    if a.engine not in ENGINES:
        raise MokInputError(f"--engine {a.engine!r} must be one of {ENGINES}")
    if a.refit_by is not None:
        check_key(a.refit_by, "--refit-by")
        if a.params is not None:
            raise MokInputError("--params with --refit-by: each workload is scored with its own "
                                "refit; drop one of them")
    if a.free is not None:
        if a.refit_by is None:
            raise MokInputError("--free needs --refit-by (it names the refit's parameters)")
        param_names(a.free, "--free")
    if a.params is not None:
        read_params(a.params)
    elif a.allow_params_mismatch:   # it was ignored: each workload took its own hardware's file
        raise MokInputError("--allow-params-mismatch applies to --params FILE; without it each "
                            "workload is scored with its hardware's own parameters")


def _run(a: argparse.Namespace) -> int:
    _check_flags(a)
    files = a.runs or [str(f) for f in record_files(H200_RUNS)]
    if not files:
        print(f"no run-record files given and none in {H200_RUNS}: no regret to report")
        return 0
    records = read_records(files)
    found = sweeps(records, a.min_configs)
    if not found:
        n_mok = sum(r["system"] == "mok" for r in records)
        msg = (f"no workload in {len(files)} file(s) ({n_mok} MoK records) has a measured sweep of "
               f">= {a.min_configs} distinct knob configs: no regret to report (nothing invented)")
        print(json.dumps({"workloads": [], "message": msg}) if a.json else msg)
        return 0
    out = []
    for key, recs in sorted(found.items(), key=lambda kv: str(kv[0])):
        hw = key[0]
        if a.refit_by:
            held = group_value(recs[0], a.refit_by)
            train = [r for r in records if r["hardware"]["preset"] == hw
                     and group_value(r, a.refit_by) != held
                     and (r["system"] == "mok" or r["system"].startswith("micro-"))]
            if not any(r["system"] == "mok" for r in train):
                raise MokInputError(f"--refit-by {a.refit_by}: no MoK records outside "
                                    f"{a.refit_by}={held} to fit")
            params = refit_params(train, hw, a.free.split(",") if a.free else None)
            how = f"refit without {a.refit_by}={held}"
        elif a.params:
            params = read_params(a.params)
            if params.hardware != hw and not a.allow_params_mismatch:
                raise MokInputError(f"--params {a.params!r} was fitted for {params.hardware!r}, "
                                    f"not {hw!r}; pass --allow-params-mismatch")
            how = a.params
        else:
            params, how = load_params(None, hw), f"shipped {hw} parameters"
        row = workload_regret(recs, params, a.engine)
        row["params"] = how
        out.append(row)
    if a.json:
        print(json.dumps({"workloads": out}, indent=1))
        return 0
    print(f"{'workload':<44}{'cfgs':>5}{'best ms':>9}{'tuned ms':>9}{'regret':>8}{'rank':>6}"
          f"{'default ms':>11}{'regret':>8}  params")
    for r in out:
        w = r["workload"]
        name = f"{w['hardware']}/{w['model']}/ep{w['ep']}/n{w['tokens']}/{w['pass']}/{w['routing']}"
        d = r["default"]
        print(f"{name:<44}{r['configs']:>5}{r['best_measured']['measured_ms']:>9.3f}"
              f"{r['tuned']['measured_ms']:>9.3f}{100 * r['tuned']['regret']:>7.1f}%"
              f"{r['tuned']['measured_rank']:>6}{d['measured_ms']:>11.3f}{100 * d['regret']:>7.1f}%"
              f"{'' if d['exact'] else '*'}  {r['params']}")
    tr = [r["tuned"]["regret"] for r in out]
    print(f"tuned regret: mean {100 * np.mean(tr):.2f}%, max {100 * max(tr):.2f}% over "
          f"{len(out)} workload(s); * = default not measured, nearest measured config used")
    return 0


if __name__ == "__main__":
    sys.exit(main())
