"""Knob effects, measured against predicted, on the real 2-GPU runs (docs/calibration.md, "Real
2-GPU runs"): which knob differences the model orders wrongly, and by how much.

    python -m calibration.knob_pairs [--engine analytic|sim] [--by tokens|model] [--worst N]
    python -m calibration.knob_pairs RUNS.jsonl ... [--params FILE] [--engine ...] [--worst N]

Pairs of MoK records of one workload, timed by one bench command (same `note`: no run-to-run
drift between them), whose configurations differ in exactly one knob. For each knob (from the
smaller value, or the name first in alphabetical order, to the other) and each context (the
other knobs' values, tokens, routing, model): the mean relative change b / a - 1 measured and
predicted, their difference, how many pairs the records resolve (p10-p90 intervals disjoint,
as calibration/noise.py `resolved_pairs`) and the share of those the model moves the same way.
Predictions are held out as in calibration/report_h200x2.py (each token count, or each model,
predicted by the fit without it). Given run-record files instead (e.g. the single-GPU automatic-
pick sweeps, which no fit reads), their records are predicted with the shipped parameters of
their hardware (or --params). Then the workloads of the largest tuner regret: the model's
pick and the best measured configuration, each with its median [p10, p90], and whether the
records resolve the two (intervals disjoint) and whether one bench command timed both.
"""

from __future__ import annotations

import collections
import sys

import numpy as np

from mok_model.cli import doc_parser, int_at_least, run_tool
from mok_model.errors import MokInputError
from mok_model.records import predictable, read_records, record_files, record_where, workload_key
from mok_model.scenario import KNOBS

from .checks import params_file
from .noise import disjoint, pick_key
from .report_h200x2 import H200X2, held_out_fits
from .scoring import predict_shipped
from .validate import validate

CONTEXT = ("dispatch", "combine", "comm_sms", "tokens", "routing", "model")


def _order(v) -> tuple:
    return (0, v, "") if isinstance(v, (int, float)) else (1, 0, str(v))


def knob_pairs(records: list[dict], predicted) -> list[dict]:
    """Pairs of MoK records (same workload and bench command) that differ in exactly one knob:
    knob, its two values (a before b), measured and predicted b / a - 1, whether the records
    resolve the pair, and the context (the first record's other knobs, tokens, routing, model)."""
    pred = dict(zip((r["id"] for r in records), predicted))
    groups: dict[tuple, list[dict]] = collections.defaultdict(list)
    for r in records:
        if r["system"] == "mok":
            groups[workload_key(r) + (r.get("note", ""),)].append(r)
    out = []
    for rs in groups.values():
        for i, a in enumerate(rs):
            for b in rs[i + 1:]:
                diff = [k for k in KNOBS if a["config"][k] != b["config"][k]]
                if len(diff) != 1:
                    continue
                k = diff[0]
                x, y = (a, b) if _order(a["config"][k]) < _order(b["config"][k]) else (b, a)
                lx, ly = x["latency_ms"], y["latency_ms"]
                model = x["model"] if isinstance(x["model"], str) else "(shape)"
                out.append({"knob": k, "a": x["config"][k], "b": y["config"][k],
                            "measured": ly["median"] / lx["median"] - 1,
                            "predicted": pred[y["id"]] / pred[x["id"]] - 1,
                            "resolved": disjoint(lx, ly),
                            "context": {**{c: x["config"][c] for c in CONTEXT[:3]},
                                        "tokens": x["tokens"], "model": model,
                                        "routing": x["routing"].get("kind", "uniform")}})
    return out


def summarize(pairs: list[dict]) -> dict:
    """Mean measured and predicted change, their difference (predicted - measured), pairs,
    resolved pairs and the share of those the model moves the same way as measured."""
    m = np.array([p["measured"] for p in pairs])
    q = np.array([p["predicted"] for p in pairs])
    res = np.array([p["resolved"] for p in pairs], bool)
    right = float(np.mean(np.sign(m[res]) == np.sign(q[res]))) if res.any() else None
    return {"n": len(pairs), "measured": float(m.mean()), "predicted": float(q.mean()),
            "error": float((q - m).mean()), "resolved": int(res.sum()), "right": right}


def _line(label: str, s: dict) -> str:
    right = "  n/a" if s["right"] is None else f"{100 * s['right']:4.0f}%"
    return (f"  {label:28s} n {s['n']:3d} measured {100 * s['measured']:+5.1f}% predicted "
            f"{100 * s['predicted']:+5.1f}% error {100 * s['error']:+5.1f} resolved "
            f"{s['resolved']:3d} same way {right}")


def regrets(records: list[dict], predicted) -> list[dict]:
    """Per workload (MoK records), largest regret first: the model's pick (noise.pick_key), the
    best measured record, the regret, and whether the records resolve the two (p10-p90
    intervals disjoint) and one bench command timed both."""
    groups: dict[tuple, list[int]] = collections.defaultdict(list)
    for i, r in enumerate(records):
        if r["system"] == "mok":
            groups[workload_key(r)].append(i)
    out = []
    for ix in groups.values():
        pick = min(ix, key=lambda i: pick_key(records[i], predicted[i]))
        best = min(ix, key=lambda i: records[i]["latency_ms"]["median"])
        lp, lb = records[pick]["latency_ms"], records[best]["latency_ms"]
        out.append({"pick": pick, "best": best, "regret": lp["median"] / lb["median"] - 1,
                    "resolved": disjoint(lp, lb),
                    "one_run": records[pick].get("note") == records[best].get("note")})
    return sorted(out, key=lambda x: -x["regret"])


def _config(r: dict, predicted: float) -> str:
    c, lat = r["config"], r["latency_ms"]
    return (f"{c['dispatch']}/{c['combine']} minibatch {c['minibatch']} comm SMs {c['comm_sms']}: "
            f"{lat['median']:.3f} [{lat['p10']:.3f}, {lat['p90']:.3f}] ms, predicted {predicted:.3f}")


def main(argv: list[str] | None = None) -> int:
    ap = doc_parser("python -m calibration.knob_pairs", __doc__)
    ap.add_argument("--engine", choices=("analytic", "sim"), default="analytic")
    ap.add_argument("--by", choices=("tokens", "model"), default=None,
                    help="the 2-GPU report's hold-out (default tokens); not with run files")
    ap.add_argument("--worst", type=int_at_least(0), default=8,
                    help="workloads of the largest regret to show")
    ap.add_argument("runs", nargs="*",
                    help="run-record files (default: the real 2-GPU runs, held out by --by)")
    ap.add_argument("--params", default=None,
                    help="parameters file for given run files (default: the shipped ones)")
    return run_tool(ap, report, argv)


def report(a) -> None:
    """Each knob step's measured and predicted effects, then the largest regrets."""
    if a.runs:
        if a.by is not None:
            raise MokInputError(f"--by {a.by} applies to the 2-GPU report (no run files): given "
                                f"run files are predicted with one parameters file, none held out")
        if a.params is not None:        # a bad file named before the records are read
            params_file(a.params, "--params")
        recs = [r for r in read_records(a.runs) if r["system"] == "mok" and predictable(r)
                and r["source"] == "measured"]      # published rows name no knobs to pair
        if not recs:
            raise MokInputError("no measured MoK records the model predicts in the files")
        bare = next((r for r in recs if not {"p10", "p90"} <= set(r["latency_ms"])), None)
        if bare is not None:    # whether the records resolve a pair is read from them
            raise MokInputError(f"{record_where(bare)}: latency_ms names no p10 and p90; knob pairs "
                                f"and regrets are resolved by the runs' p10-p90 intervals")
        pred = list(predict_shipped(recs, a.params, a.engine))
        how = f"{a.engine}, shipped parameters" if a.params is None else f"{a.engine}, {a.params}"
    else:
        if a.params is not None:
            raise MokInputError("--params applies to given run files; the 2-GPU report fits "
                                "its own held-out parameters")
        runs = read_records(record_files(H200X2, "bench_*.jsonl"))
        a.by = a.by or "tokens"
        fits = held_out_fits(runs)
        mok = [r for r in runs if r["system"] == "mok" and predictable(r)]
        recs, pred = [], []
        for g in sorted({str(r[a.by]) for r in mok}):
            test = [r for r in mok if str(r[a.by]) == g]
            recs += test
            pred += [x["predicted_ms"] for x in validate(test, fits[a.by, g], a.engine).rows]
        how = f"{a.engine}, held out by {a.by}"
    pairs = knob_pairs(recs, pred)
    steps = sorted({(p["knob"], p["a"], p["b"]) for p in pairs},
                   key=lambda t: (KNOBS.index(t[0]), _order(t[1]), _order(t[2])))
    for k, x, y in steps:
        mine = [p for p in pairs if (p["knob"], p["a"], p["b"]) == (k, x, y)]
        print(f"{k}: {x} -> {y} ({how})")
        print(_line("all", summarize(mine)))
        for c in CONTEXT:
            if c == k:
                continue
            for v in sorted({p["context"][c] for p in mine}, key=_order):
                print(_line(f"{c} {v}", summarize([p for p in mine if p["context"][c] == v])))
    print(f"largest regrets ({how}):")
    for x in regrets(recs, pred)[:a.worst]:
        r = recs[x["pick"]]
        print(f"  {r['model']} {r['tokens']} {r['routing'].get('kind', 'uniform')} "
              f"{r['routing'].get('arg', '')}: regret {100 * x['regret']:.1f}%, "
              f"{'resolved' if x['resolved'] else 'within the noise'}, "
              f"{'one bench command' if x['one_run'] else 'two runs'}")
        print(f"    pick {_config(r, pred[x['pick']])}")
        print(f"    best {_config(recs[x['best']], pred[x['best']])}")


if __name__ == "__main__":
    sys.exit(main())
