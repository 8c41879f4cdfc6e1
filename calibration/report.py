"""Run the whole calibration check on a set of run records and print it as Markdown:
calibrate held out by token count and by model shape (each group in turn), validate the
held-out predictions (analytic and, optionally, the simulator), and tuner regret.

    python -m calibration.report RUN_FILES... [--out DIR] [--sim] [--free P1,P2] [--also FILES...]

Every number it prints comes from the commands it prints (run in-process, same code paths).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import subprocess
import sys
from pathlib import Path

from mok_model.cli import doc_parser, run_tool
from mok_model.errors import MokInputError
from mok_model.fileio import check_output_dir
from mok_model.params import read_fit_record

from .checks import param_names
from .cli import calibrate_cli, priors_for, validate_cli
from .regret import main as regret_main


def _run(fn, argv: list[str]) -> tuple[int, str]:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = fn(argv)
    return rc, buf.getvalue()


def _pct(x) -> str:
    return "n/a" if x is None else f"{100 * x:.2f}%"


def _rho(x) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def _bias_table(runs: list[str], params: Path) -> None:
    """Mean signed error / MAPE per knob value of the fit to all records."""
    from mok_model.params import read_params
    from mok_model.records import KNOBS, read_records

    from .fit import predictable
    from .validate import error_by, validate

    recs = [r for r in read_records(runs) if predictable(r)]
    v = validate(recs, read_params(params))
    print("\n| knob | value: mean signed error / MAPE (n) |\n|---|---|")
    for key in ("model", "tokens") + KNOBS:
        by = error_by(recs, v, key)
        if len(by) > 1:
            print(f"| {key} | " + "; ".join(f"{k}: {100 * b:+.1f}% / {100 * m:.1f}% ({n})"
                                         for k, (b, m, n) in by.items()) + " |")


def _also_table(files: list[str], params: Path) -> None:
    """Records kept out of every fit (other routing), judged per routing with the fit to all."""
    from mok_model.params import read_params
    from mok_model.records import read_records

    from .fit import predictable
    from .split import group_value
    from .validate import validate

    recs = [r for r in read_records(files) if predictable(r)]
    print(f"\n    mok validate {' '.join(files)} --params {params}\n")
    print("| records never fitted on | routing | n | MAPE | max APE | mean signed error | Spearman |")
    print("|---|---|---:|---:|---:|---:|---:|")
    p = read_params(params)
    groups: dict[str, list[dict]] = {}
    for r in recs:
        groups.setdefault(group_value(r, "routing"), []).append(r)
    for name, rs in sorted(groups.items()):
        v = validate(rs, p)
        bias = sum(x["predicted_ms"] / x["measured_ms"] - 1 for x in v.rows) / v.n
        print(f"| {', '.join(sorted({r['_file'].split('/')[-1] for r in rs}))} | {name} | {v.n} | "
              f"{_pct(v.mape)} | {_pct(v.max_ape)} | {100 * bias:+.2f}% | {_rho(v.spearman)} |")


def _regret_table(doc: dict) -> None:
    """calibration.regret's --json document as a table (its message where no workload has a
    measured sweep: the table of no rows divided by zero)."""
    def cfg(c: dict) -> str:
        return f"{c['dispatch']}/{c['combine']} mb {c['minibatch']} c {c['comm_sms']} r {c['macrobatch']}"

    rows = doc["workloads"]
    if not rows:
        print(doc["message"])
        return
    print("| workload | configs | best measured | tuned pick (predicted ms) | measured ms | regret | "
          "rank | default* ms | default regret |")
    print("|---|---:|---|---|---:|---:|---:|---:|---:|")
    for r in rows:
        w, t, b, d = r["workload"], r["tuned"], r["best_measured"], r["default"]
        name = f"{w['model']} {w['tokens']}" + ("" if w["routing"] == "uniform" else f" {w['routing']}")
        print(f"| {name} | {r['configs']} | {cfg(b['config'])}: "
              f"{b['measured_ms']:.3f} ms | {cfg(t['config'])} ({t['predicted_ms']:.3f}) | "
              f"{t['measured_ms']:.3f} | {100 * t['regret']:.2f}% | {t['measured_rank']} | "
              f"{d['measured_ms']:.3f} | {100 * d['regret']:.2f}% |")
    reg = [r["tuned"]["regret"] for r in rows]
    ok = sum(x <= 0.03 for x in reg)
    print(f"\nTuned regret: mean {100 * sum(reg) / len(reg):.2f}%, max {100 * max(reg):.2f}%; "
          f"<= 3% on {ok} of {len(reg)} workloads. *default: the measured config nearest to "
          f"the published default scaled to this GPU.")


def main(argv: list[str] | None = None) -> int:
    p = doc_parser("python -m calibration.report", __doc__)
    p.add_argument("runs", nargs="+")
    p.add_argument("--out", default="calibration/out", help="where parameter files and plots go")
    p.add_argument("--sim", action="store_true", help="also validate with the simulator")
    p.add_argument("--free", default=None, help="stage-2 parameters (default: calibrate's choice)")
    p.add_argument("--also", nargs="+", default=[], help="run files never fitted on, validated "
                   "with the fit to all RUN_FILES (e.g. skewed-routing sweeps)")
    return run_tool(p, _report, argv)


def _check(a: argparse.Namespace) -> Path:
    """Every input checked before the first fit: the files (RUN_FILES and --also), --free; the
    output folder made."""
    from mok_model.records import model_records, read_records, record_where, shared_record

    from .split import group_values

    records = read_records(a.runs)
    layer, _ = model_records(records)
    for by in ("tokens", "model"):      # each held out in turn: calibrate needs two groups
        values = group_values(layer, by)
        if len(values) < 2:
            raise MokInputError(f"RUN_FILES: the report holds out each {by} in turn, and the "
                                f"layer records have {by} {values} only; give records of two "
                                f"{by} values or more")
    if a.also:
        try:
            also = read_records(a.also)
        except MokInputError as exc:
            raise MokInputError(f"--also: {exc}") from None
        if both := shared_record(records, also):  # "never fitted on" after the fit read it
            again, twin = both
            raise MokInputError(f"--also {record_where(again)}: record {again['id']!r} is also in "
                                f"RUN_FILES ({record_where(twin)}), which are fitted on; --also "
                                f"names run files never fitted on")
    param_names(a.free, "--free")
    return check_output_dir(a.out, "--out")


def _report(a: argparse.Namespace) -> int:
    out = _check(a)
    free = ["--free", a.free] if a.free is not None else []
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "mok_model", "calibration"],
                           capture_output=True, text=True).stdout.splitlines()
    dirty_paths = sorted({ln[3:] for ln in dirty if not ln.startswith("??")})
    print(f"Code: commit {commit}" + (f", with uncommitted changes in {', '.join(dirty_paths)}"
                                      if dirty_paths else ", clean (mok_model/, calibration/)") + ".")
    print(f"Records: {' '.join(a.runs)}\n")

    # fit on everything (the shipped-style file) and validate it (training error)
    allp = out / "h200-all.json"
    argv_all = [*a.runs, "--out", str(allp), *free, "--json"]
    rc, txt = _run(calibrate_cli, argv_all)
    if rc:
        print(f"calibrate failed (exit {rc})")
        return rc
    doc = json.loads(txt)
    print(f"    mok calibrate {' '.join(argv_all[:-1])}")
    fitted = doc["stages"]["micro"]["fitted"]
    prior = priors_for(doc["hardware"])
    print("\n| stage | parameter | prior | fitted | fitted to | its records' errors |")
    print("|---|---|---:|---:|---|---|")
    res = doc["stages"]["micro"]["residuals"]
    for k, src in fitted.items():
        e = [r["rel_error"] for r in res if src.startswith(r["system"])]
        rng = f"{100 * min(e):+.1f}% .. {100 * max(e):+.1f}%" if e else ""
        print(f"| 1 | {k} | {prior[k]:.4g} | {doc['stages']['micro']['values'][k]:.4g} | {src} | {rng} |")
    for k, v in doc["stages"]["layer"]["values"].items():
        print(f"| 2 | {k} | {prior[k]:.4g} | {v:.4g} | {doc['stages']['layer']['n']} layer records | |")
    for n in doc["notes"]:
        print(f"Note: {n}")
    print("\n| fitted on | judged on | n | MAPE | max APE | Spearman |")
    print("|---|---|---:|---:|---:|---:|")
    t = doc["train"]
    print(f"| all | the same records (training error) | {t['n']} | {_pct(t['mape'])} | "
          f"{_pct(t['max_ape'])} | {_rho(t['spearman'])} |")
    cmds = []
    for by in ("tokens", "model"):
        path = out / f"h200-cv-{by}.json"
        # these files only judge the fit (their folds); no band needed
        argv_cv = [*a.runs, "--out", str(path), "--holdout-by", by, "--holdout", "all", *free,
                   "--band", "none", "--json"]
        rc, txt = _run(calibrate_cli, argv_cv)
        cmds.append("mok calibrate " + " ".join(argv_cv[:-1]))
        cv = json.loads(txt)["cross_validation"]
        for f in cv["folds"]:
            print(f"| all but {by}={f['heldout']} | {by}={f['heldout']} (held out) | {f['n']} | "
                  f"{_pct(f['mape'])} | {_pct(f['max_ape'])} | {_rho(f['spearman'])} |")
        q = cv["pooled"]
        print(f"| **each {by} group in turn** | **pooled held-out** | {q['n']} | "
              f"**{_pct(q['mape'])}** | **{_pct(q['max_ape'])}** | **{_rho(q['spearman'])}** |")
    print()
    for c in cmds:
        print(f"    {c}")
    plot = out / "h200-validate.png"
    argv_v = [*a.runs, "--params", str(allp), "--plot", str(plot), "--json"]
    _run(validate_cli, argv_v)
    print(f"    mok validate {' '.join(argv_v[:-1])}")
    if a.sim:
        for by in ("tokens", "model"):
            # the simulator with the analytic fit's parameters, on each held-out group
            rows = []
            for f in read_fit_record(out / f"h200-cv-{by}.json")["cross_validation"]["folds"]:
                held = out / f"h200-{by}-{f['heldout']}.json"
                argv_h = [*a.runs, "--out", str(held), "--holdout-by", by, "--holdout", f["heldout"],
                          *free, "--band", "none", "--json"]
                _run(calibrate_cli, argv_h)
                argv_s = [*a.runs, "--params", str(held), "--heldout-only", "--engine", "sim",
                          "--json"]
                rc, txt = _run(validate_cli, argv_s)
                v = json.loads(txt)
                rows.append((f["heldout"], v))
                print(f"    mok validate {' '.join(argv_s[:-1])}")
            for value, v in rows:
                print(f"sim, held out {by}={value}: n={v['n']} MAPE {_pct(v['mape'])} max "
                      f"{_pct(v['max_ape'])} Spearman {_rho(v['spearman'])}")
    _bias_table(a.runs, allp)
    if a.also:
        _also_table(a.also, allp)
        argv_r = [*a.also, "--params", str(allp), "--json"]
        rc, txt = _run(regret_main, argv_r)
        print(f"\n    python -m calibration.regret {' '.join(argv_r[:-1])}\n")
        _regret_table(json.loads(txt))
    for by in ("tokens", "model"):
        argv_r = [*a.runs, "--refit-by", by, *free, "--json"]
        rc, txt = _run(regret_main, argv_r)
        print(f"\n    python -m calibration.regret {' '.join(argv_r[:-1])}\n")
        _regret_table(json.loads(txt))
    return 0


if __name__ == "__main__":
    sys.exit(main())
