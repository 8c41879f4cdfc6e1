"""Leave-one-model-out and leave-one-EP-out figures of the single-H200 (`h200-1`) fit.

    python -m calibration.report_space RUN_FILES... [--by model,ep] [--table none,relative]
                                       [--table-system gemm-only] [--sim-records N] [--free P,..]
                                       [--fix P,..] [--thin K] [--jobs J]
                                       [--json]

For each key (model, ep) and each of its values in turn, every record of that value is held out
(MoK runs, the GEMM-phase records a table is built from, and the microbenchmarks of a model
preset alike; microbenchmarks of the hardware alone, such as the copy rate, stay), the
h200-1 parameters are fitted from priors on the rest (`mok calibrate`'s two stages: the
microbenchmarks, then calibration.cli.default_free's layer terms), and the held-out MoK runs are
predicted. Pooled over the folds (every MoK record predicted once, by a fit that never saw its
model or its EP size): MAPE, max error, mean signed error, Spearman within each workload (its
configurations; workloads with >= 3), and tuner regret on workloads with >= 8 measured MoK
configurations (the model's pick among exactly those, against the best measured), and the same
over workloads with >= 4 (the space sweep measures 4 per workload).

--table absolute: each fold builds the GEMM efficiency table (mok_model/gemm_table.py) from its
training records of --table-system alone, so a held-out model's or EP's own GEMM phases never
reach its fit; gemm_eff is then not fitted. --table relative: the same table used for its shape
trend only (records of another GEMM implementation: every gemm-only record so far times the
library's grouped GEMM), times a fitted gemm_eff. --table none: one gemm_eff, as shipped.

The simulator predicts a sample of the held-out workloads (every K-th workload of each fold,
whole workloads, K chosen so that about --sim-records records are simulated, 0: none); the
output says how many. MoK records whose `tiles` differ from the tile of their workload's
GEMM-phase record (or from the kernel's default where there is none) are left out: the model
has no tile knob, and the output counts them.

Where the files hold runs measured twice (a sweep and its re-measurement), the report also
prints what the older measurement of each such run predicts of the newer (calibration/rerun.py:
MAPE, max, Spearman, regret): the ceiling run-to-run drift puts on any model's figures.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections import Counter, defaultdict
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from mok_model.cli import doc_parser, int_at_least, local_processes, run_tool
from mok_model.errors import MokInputError
from mok_model.fileio import loads_json
from mok_model.gemm_table import DEFAULT_TILE
from mok_model.records import in_id_order, read_records, routing_reproduced, workload_key

from .checks import param_names, required_text
from .cli import default_free, priors_for
from .fit import fit
from .gemm_table import SYSTEM as TABLE_SYSTEM
from .gemm_table import GEMM_SYSTEMS as TABLE_SYSTEMS
from .gemm_table import SHIPPED_SUSTAIN, build_table, record_points, table_records
from .micro import fit_micro
from .rerun import ceiling, repeated
from .split import check_key, group_value, group_values
from .validate import evaluate, validate

HARDWARE = "h200-1"
REGRET_CONFIGS = 8
GOALS = {"mape": 0.06, "max_ape": 0.25, "spearman": 0.9, "regret": 0.03}


# the kernel's BF16 default tile options (mok_kernels/megakernel.py KernelConfig); records that
# name fewer options ran with these for the rest
KERNEL_TILE = {**DEFAULT_TILE, "block_k": 64, "num_warps": 8, "num_stages": 4}


def _tile(rec: dict) -> tuple:
    return tuple(sorted({**KERNEL_TILE, **(rec.get("tiles") or {})}.items()))


def usable(records: list[dict], table_system: str = TABLE_SYSTEM) -> tuple[list[dict], dict]:
    """The h200-1 records a report uses: forward MoK runs whose tile the model describes (that of
    their workload's GEMM-phase record, the newest where several are, else the kernel's
    default), the GEMM-phase records and the microbenchmarks. Returns (records, counts of what
    was left out and why)."""
    left: Counter = Counter()
    recs = [r for r in records if r["hardware"]["preset"] == HARDWARE]
    left["other hardware"] = len(records) - len(recs)
    phases = sorted((r for r in recs if r["system"] == table_system), key=lambda r: (r["date"], r["id"]))
    gemm_tile = {workload_key(r): _tile(r) for r in phases}     # the newest record's tile wins
    out = []
    for r in recs:
        if r["system"] == "mok":
            if not routing_reproduced(r):
                left["mok zipf runs whose expert order the model cannot draw"] += 1
                continue
            if r["pass"] != "fwd":
                left["mok backward"] += 1
                continue
            want = gemm_tile.get(workload_key(r), _tile({}))
            if _tile(r) != want:
                left["mok with a tile other than its workload's GEMM phases'"] += 1
                continue
            out.append(r)
        elif r["system"] == table_system or r["system"].startswith("micro-"):
            out.append(r)
        else:
            left[f"system {r['system']} (not fitted here)"] += 1
    return out, {k: v for k, v in left.items() if v}


def hardware_micro(rec: dict) -> bool:
    """A microbenchmark of the hardware alone (copy, flag, reduce, launch: its model is a shape
    such as {"hidden": 7168}, not a model preset), which says nothing about a model or EP size."""
    return rec["system"].startswith("micro-") and isinstance(rec["model"], dict)


def folds(records: list[dict], by: str) -> list[tuple[str, list[dict], list[dict]]]:
    """(held-out value, training records, held-out MoK records) for each value of `by` among the
    MoK records. Every record of the held-out value is out of training, whatever its system: the
    GEMM-phase records and the microbenchmarks of that model or EP size (the megakernel's
    compute, the schedule build) included; only microbenchmarks of the hardware alone
    (hardware_micro) stay in every fold."""
    mok = [r for r in records if r["system"] == "mok"]
    out = []
    for value in group_values(mok, by):
        train = [r for r in records if group_value(r, by) != value or hardware_micro(r)]
        held = [r for r in mok if group_value(r, by) == value]
        out.append((value, train, held))
    return out


TABLES = ("none", "absolute", "relative")


def fit_fold(train: list[dict], table: str, table_system: str = TABLE_SYSTEM,
             free_arg: list[str] | None = None, fix: tuple = (), known: dict | None = None):
    """`mok calibrate`'s two stages from the h200-1 priors on `train`; with table "absolute" or
    "relative" the GEMM efficiency table of that level is built from train's GEMM-phase records
    first (`known`: points already made, by record id; only train's are used). `free_arg` replaces
    the layer stage's choice of free parameters; `fix` removes parameters from it (held at
    their priors). Returns (params, free parameters, table points
    or 0)."""
    base = priors_for(HARDWARE)
    points = 0
    if table != "none":
        if not table_records(train, HARDWARE, table_system):
            raise MokInputError(f"--table {table}: a fold has no {table_system} records to build "
                                f"the GEMM table from")
        t = build_table(train, HARDWARE, sorted({r["_file"] for r in train if "_file" in r}),
                        table_system, level=table, known=known, sustain=SHIPPED_SUSTAIN)
        base = base.with_table(t)
        points = len(t.points)
    micro = fit_micro(train, base)
    layer = [r for r in train if r["system"] == "mok"]
    free = list(free_arg) if free_arg else default_free(layer, set(micro.fitted))
    if table == "absolute":  # the table replaces gemm_eff; a relative one leaves its level to it
        free = [f for f in free if f != "gemm_eff"]
    free = [f for f in free if f not in fix]
    return fit(layer, micro.params, free).params, free, points


def every_nth_workload(recs: list[dict], every: int) -> set:
    """The workload keys of every `every`-th workload of `recs`, in a canonical order (sorted by
    the key's text), so the choice does not depend on the order the files or records come in."""
    return set(sorted({workload_key(r) for r in recs}, key=repr)[::every])


def sim_sample(held: list[dict], every: int) -> list[dict]:
    """Every `every`-th workload of `held` (whole workloads, every_nth_workload)."""
    keep = every_nth_workload(held, every)
    return [r for r in held if workload_key(r) in keep]


def _run_fold(args) -> dict:
    by, value, train, held, table, table_system, sim_every, free_arg, fix, thin, known = args
    t0 = time.time()
    if thin > 1:  # every thin-th training workload's MoK runs (GEMM phases and micro all kept)
        keep = every_nth_workload([r for r in train if r["system"] == "mok"], thin)
        train = [r for r in train if r["system"] != "mok" or workload_key(r) in keep]
    params, free, points = fit_fold(train, table, table_system, free_arg, fix, known)
    v = validate(held, params, "analytic")
    out = {"by": by, "value": value, "table": table, "free": free, "table_points": points,
           "values": {k: params[k] for k in free}, "ids": [r["id"] for r in held],
           "measured": [x["measured_ms"] for x in v.rows],
           "analytic": [x["predicted_ms"] for x in v.rows], "regret": []}
    out["regret"] = regrets(held, out["analytic"], "analytic")
    out["regret4"] = regrets(held, out["analytic"], "analytic", 4)
    if sim_every:
        sample = sim_sample(held, sim_every)
        vs = validate(sample, params, "sim")
        out["sim_ids"] = [r["id"] for r in sample]
        out["sim"] = [x["predicted_ms"] for x in vs.rows]
        out["regret"] += regrets(sample, out["sim"], "sim")
        out["regret4"] += regrets(sample, out["sim"], "sim", 4)
    out["seconds"] = time.time() - t0
    return out


def regrets(recs: list[dict], predicted: list[float], engine: str,
            least: int = REGRET_CONFIGS) -> list[dict]:
    """Tuner regret on each workload of `recs` with >= `least` measured MoK configurations:
    the configuration predicted fastest among exactly those, measured against the best measured
    (repeated runs of one configuration: their median)."""
    by: dict[tuple, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    for r, p in zip(recs, predicted):
        by[workload_key(r)][json.dumps(r["config"], sort_keys=True)].append(
            (p, r["latency_ms"]["median"]))
    out = []
    for key, cfgs in by.items():
        if len(cfgs) < least:
            continue
        pred = np.array([v[0][0] for v in cfgs.values()])
        meas = np.array([float(np.median([m for _, m in v])) for v in cfgs.values()])
        out.append({"workload": _name(key), "engine": engine, "configs": len(cfgs),
                    "regret": float(meas[int(np.argmin(pred))] / meas.min() - 1)})
    return out


def _name(key: tuple) -> str:
    hw, model, ep, tokens, _pass, _prec, routing, _seed, *_ = key
    return f"{model} ep{ep} n{tokens} {routing}"


def pooled(results: list[dict], records: dict[str, dict], engine: str) -> dict:
    """Pooled held-out metrics over the folds of one key."""
    ids_key = "ids" if engine == "analytic" else "sim_ids"
    recs, meas, pred = [], [], []
    for f in results:
        for i, p in zip(f.get(ids_key, []), f.get(engine, [])):
            recs.append(records[i])
            meas.append(records[i]["latency_ms"]["median"])
            pred.append(p)
    if not recs:
        return {"n": 0}
    v = evaluate(recs, meas, pred)
    signed = np.array(pred) / np.array(meas) - 1
    regrets = [r["regret"] for f in results for r in f["regret"] if r["engine"] == engine]
    few = [r["regret"] for f in results for r in f.get("regret4", []) if r["engine"] == engine]
    return {"n": v.n, "workloads": len({workload_key(r) for r in recs}), "mape": v.mape,
            "max_ape": v.max_ape, "bias": float(signed.mean()), "spearman": v.spearman,
            "spearman_groups": v.groups,
            "regret_max": max(regrets) if regrets else None,
            "regret_mean": float(np.mean(regrets)) if regrets else None,
            "regret_workloads": len(regrets),
            "regret4_max": max(few) if few else None,
            "regret4_mean": float(np.mean(few)) if few else None, "regret4_workloads": len(few)}


def per_group(results: list[dict], records: dict[str, dict]) -> list[dict]:
    """Analytic held-out MAPE, max and signed error per fold."""
    rows = []
    for f in results:
        meas = np.array(f["measured"])
        e = np.array(f["analytic"]) / meas - 1
        rows.append({"by": f["by"], "value": f["value"], "table": f["table"], "n": len(e),
                     "mape": float(np.abs(e).mean()), "max_ape": float(np.abs(e).max()),
                     "bias": float(e.mean()), "free": f["free"], "values": f["values"],
                     "table_points": f["table_points"], "seconds": f["seconds"]})
    return rows


def worst(results: list[dict], records: dict[str, dict], n: int = 12) -> list[dict]:
    """The largest analytic held-out errors, with what they measured."""
    rows = []
    for f in results:
        for i, m, p in zip(f["ids"], f["measured"], f["analytic"]):
            r = records[i]
            rows.append({"by": f["by"], "table": f["table"], "id": i, "model": r["model"],
                         "ep": r["ep"], "tokens": r["tokens"], "routing": _name(workload_key(r)),
                         "config": r["config"], "measured_ms": m, "predicted_ms": p,
                         "error": p / m - 1})
    return sorted(rows, key=lambda x: -abs(x["error"]))[:n]


def _pct(x) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:.1f}%"


def _met(x, goal, lower_is_better=True) -> str:
    if x is None:
        return ""
    return " (met)" if (x <= goal if lower_is_better else x >= goal) else " (not met)"


def main(argv: list[str] | None = None) -> int:
    p = doc_parser("python -m calibration.report_space", __doc__)
    p.add_argument("runs", nargs="*", help="run-record files")
    p.add_argument("--from-json", default=None, help="print the report of a saved --json output")
    p.add_argument("--by", default="model,ep", help="hold-out keys, comma list")
    p.add_argument("--table", default="none,relative",
                   help="GEMM efficiency, comma list: none (one gemm_eff), absolute (a table from "
                        "each fold's training records of the kernel's own GEMM phases), relative "
                        "(the same from another GEMM's records: its shape trend times gemm_eff)")
    p.add_argument("--table-system", default=TABLE_SYSTEM,
                   help="system of the records of the kernel's GEMM phases alone")
    p.add_argument("--sim-records", type=int_at_least(0), default=300,
                   help="about how many held-out records the simulator predicts per key (0: none)")
    p.add_argument("--free", default=None,
                   help="layer parameters to fit in every fold (default: mok calibrate's choice)")
    p.add_argument("--fix", default=None,
                   help="parameters to leave out of the default choice (held at their priors)")
    p.add_argument("--thin", type=int_at_least(1), default=1,
                   help="fit on every K-th training workload's MoK runs (for speed; held-out "
                        "records are all predicted)")
    p.add_argument("--jobs", type=int_at_least(1), default=2, help="folds fitted in parallel")
    p.add_argument("--json", action="store_true")
    return run_tool(p, _run, argv)


def _saved(path: str) -> dict:
    """A saved --json output, checked for the fields the report prints."""
    required_text(path, "--from-json")          # '' read the folder '.'
    try:
        doc = loads_json(Path(path).read_text(encoding="utf-8"))
    except (FileNotFoundError, IsADirectoryError):
        raise MokInputError(f"--from-json {path!r}: no such file"
                            + (" (it is a folder)" if Path(path).is_dir() else "")) from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise MokInputError(f"--from-json {path!r}: not a JSON file ({exc})") from None
    need = ("files", "records", "workloads", "left_out", "summary", "folds")
    if not isinstance(doc, dict) or any(k not in doc for k in need):
        raise MokInputError(f"--from-json {path!r}: not a report_space --json output (needs "
                            f"{', '.join(need)})")
    return doc


def _run(a: argparse.Namespace) -> int:
    t0 = time.time()
    if a.from_json is not None:
        if a.runs:
            raise MokInputError("--from-json prints a saved report; drop the run-record files")
        print(render(_saved(a.from_json)))
        return 0
    if not a.runs:
        raise MokInputError("give run-record files (or --from-json FILE)")
    local_processes("--jobs", a.jobs)
    required_text(a.table_system, "--table-system", "system name")   # as gemm_table's --system
    if a.table_system not in TABLE_SYSTEMS:
        raise MokInputError(f"--table-system {a.table_system!r}: choose from "
                            f"{', '.join(TABLE_SYSTEMS)} (the systems of GEMM-phase records)")
    tables = a.table.split(",")
    if set(tables) - set(TABLES):
        raise MokInputError(f"--table {a.table!r}: choose from {', '.join(TABLES)}")
    keys = a.by.split(",")
    for k in keys:
        check_key(k, "--by")
    for flag, items in (("--table", tables), ("--by", keys)):
        twice = sorted({x for x in items if items.count(x) > 1})
        if twice:
            raise MokInputError(f"{flag} {','.join(items)!r} names {twice[0]!r} twice; each once")
    for flag, value in (("--free", a.free), ("--fix", a.fix)):
        param_names(value, flag)
    if a.free is not None and a.fix is not None:    # --free P --fix P fitted nothing of P
        raise MokInputError(f"--fix {a.fix!r} with --free {a.free!r}: --fix leaves parameters out "
                            f"of the default choice, and --free replaces that choice; name the "
                            f"parameters to fit in --free alone")
    files = [str(Path(f)) for f in a.runs]
    # one canonical order (the records' ids), so the folds' fits, samples and figures do not
    # depend on the order the files are named in; read as named ('' is not the folder '.')
    records, left = usable(in_id_order(read_records(a.runs)), a.table_system)
    by_id = {r["id"]: r for r in records}
    mok = [r for r in records if r["system"] == "mok"]
    if not mok:
        raise MokInputError(f"no forward MoK records of {HARDWARE} in the files")
    jobs, sim_every = [], {}
    # every GEMM-phase record's table point, made once: a fold's table takes its training ones
    known = record_points(records, HARDWARE, a.table_system) if set(tables) - {"none"} else {}
    for by in keys:
        sim_every[by] = 0 if a.sim_records <= 0 else max(1, round(len(mok) / a.sim_records))
        for table in tables:
            for value, train, held in folds(records, by):
                jobs.append((by, value, train, held, table, a.table_system, sim_every[by],
                             a.free.split(",") if a.free else None,
                             tuple(f for f in (a.fix or "").split(",") if f), a.thin,
                             known if table != "none" else None))
    with ProcessPoolExecutor(max_workers=max(1, a.jobs)) as ex:
        results = list(ex.map(_run_fold, jobs))
    doc = {"files": files, "left_out": left, "records": len(mok), "thin": a.thin,
           "workloads": len({workload_key(r) for r in mok}), "goals": GOALS, "summary": [],
           "folds": per_group(results, by_id), "worst": worst(results, by_id),
           "seconds": time.time() - t0, "results": results,
           "rerun": ceiling(repeated(mok))}
    for by in keys:
        for table in tables:
            fs = [f for f in results if f["by"] == by and f["table"] == table]
            for engine in ("analytic", "sim"):
                s = pooled(fs, by_id, engine)
                if s["n"]:
                    doc["summary"].append({"by": by, "table": table, "engine": engine, **s,
                                           "sampled_every": sim_every[by] if engine == "sim" else 1})
    if a.json:
        print(json.dumps(doc, indent=1))
        return 0
    print(render(doc))
    return 0


def render(doc: dict) -> str:
    """The report as Markdown (what main prints; `--from-json FILE` re-prints a saved --json)."""
    out = [f"records: {doc['records']} forward MoK runs of {HARDWARE} over {doc['workloads']} "
           f"workloads in {', '.join(doc['files'])}"]
    out += [f"left out: {v} ({k})" for k, v in doc["left_out"].items()]
    out += ["", "| held out | GEMM efficiency | engine | n | MAPE | max error | signed | Spearman "
            "(workloads) | regret max / mean (workloads >= 8 configs) | regret max / mean "
            "(>= 4 configs) |",
            "|---|---|---|---:|---:|---:|---:|---:|---|---|"]
    for s in doc["summary"]:
        eng = s["engine"] if s["engine"] == "analytic" else (
            f"simulator (1 workload in {s['sampled_every']})" if s["sampled_every"] > 1
            else "simulator")
        rho = "n/a" if s["spearman"] is None else f"{s['spearman']:.3f} ({s['spearman_groups']})"
        reg = ("n/a" if s["regret_max"] is None else
               f"{_pct(s['regret_max'])} / {_pct(s['regret_mean'])} ({s['regret_workloads']})")
        reg4 = ("n/a" if s.get("regret4_max") is None else
                f"{_pct(s['regret4_max'])} / {_pct(s['regret4_mean'])} ({s['regret4_workloads']})")
        tab = {"none": "one gemm_eff", "absolute": "table",
               "relative": "gemm_eff x table shape"}[s["table"]]
        out.append(f"| each {s['by']} in turn | {tab} | {eng} | {s['n']} | {_pct(s['mape'])}"
                   f"{_met(s['mape'], GOALS['mape'])} | {_pct(s['max_ape'])}"
                   f"{_met(s['max_ape'], GOALS['max_ape'])} | {100 * s['bias']:+.1f}% | {rho}"
                   f"{_met(s['spearman'], GOALS['spearman'], False)} | {reg}"
                   f"{_met(s['regret_max'], GOALS['regret'])} | {reg4} |")
    out += ["", "| held out | GEMM efficiency | n | MAPE | max | signed | free parameters fitted "
            "without it |", "|---|---|---:|---:|---:|---:|---|"]
    for f in doc["folds"]:
        vals = ", ".join(f"{k} {v:.3g}" for k, v in f["values"].items())
        tab = "gemm_eff" if f["table"] == "none" else f"{f['table']} table ({f['table_points']} points)"
        out.append(f"| {f['by']}={f['value']} | {tab} | {f['n']} | {_pct(f['mape'])} | "
                   f"{_pct(f['max_ape'])} | {100 * f['bias']:+.1f}% | {vals} |")
    if doc.get("thin", 1) > 1:
        out.append(f"\nfits on every {doc['thin']}th training workload's MoK runs "
                   f"(--thin {doc['thin']}); every held-out run predicted")
    out.append(f"\n{len(doc['folds'])} fits in {doc['seconds']:.0f} s; goals: MAPE <= 6%, "
               f"max <= 25%, Spearman >= 0.9, regret <= 3%")
    c = doc.get("rerun")
    if c:   # the same runs measured twice among the inputs (calibration/rerun.py)
        rho = "n/a" if c["spearman"] is None else f"{c['spearman']:.3f} ({c['spearman_groups']})"
        reg = ("n/a" if c["regret_max"] is None else
               f"{_pct(c['regret_max'])} / {_pct(c['regret_mean'])} ({c['regret_workloads']})")
        out.append(f"re-run ceiling: {c['n']} MoK runs measured twice among the inputs, the "
                   f"older measurement as a prediction of the newer: MAPE {_pct(c['mape'])}, max "
                   f"{_pct(c['max_ape'])}, Spearman {rho}, regret max / mean {reg}")
    return "\n".join(out)

if __name__ == "__main__":
    sys.exit(main())
