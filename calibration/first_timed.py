"""The setting a sweep times first, against the same kernel timed later in the same workload.

    python -m calibration.first_timed RUN_FILES... [--predictions PRED.jsonl] [--json]

A sweep (mok_kernels/space_sweep.py, the drawn-shape sweeps) times each workload's settings one
after another, the published default first, and appends them together. Two settings of one
workload run the same compiled kernel on the same work where they share the dispatch, the
combine, the comm SMs, the capacity, the ring and the kernel's tiles, and each takes every routed
row in one minibatch: the minibatch size and the comm SMs are runtime arguments of the megakernel
(mok_kernels/megakernel.py), and the schedule cuts a minibatch at the first tile past each
multiple of it (mok_kernels/schedule.py), so a minibatch at least as large as a GPU's rows gives
one, whatever its size. The model reads such a pair the same; their measured ratio is the
timing's.

Pairs are found inside each block of a file (consecutive records of one workload: one sweep's
visit), a GPU's rows taken at the median iteration's busiest (analytic.iteration_rows, every
rank). Printed: earlier / later of the pairs whose earlier setting is its block's first timed
MoK record, and of the other pairs (the control), as the mean and median of log(earlier /
later) with the mean's standard error, over all pairs and by tokens per GPU (<= 640, above).

Where a sweep has no such pairs, ``--predictions`` (the registered predictions of its runs,
calibration/register.py) gives the coarser measure of docs/calibration.md's seed-11 section: per
block, the published default setting's log(measured / predicted) minus the mean of the other
settings' (analytic engine), split by whether the default was timed first in its block. Until
session 32 every sweep timed it first, so the measure alone could not tell a timing artifact
from the model's bias on the default knobs; a sweep run with ``space_sweep
--alternate-default`` times it last in every other workload, and the two splits then tell
them apart (the same excess in both: the model's; only where first: the timing's).
"""

from __future__ import annotations

import json
import math
import sys

import numpy as np

from mok_model.analytic import iteration_rows, loads
from mok_model.cli import doc_parser, run_tool
from mok_model.errors import MokInputError
from mok_model.records import read_records, record_scenario, workload_key

from .rerun import tile_key

DECODE_TOKENS = 640     # the decode sizes of docs/calibration.md's seed-11 section


def blocks(records: list[dict]) -> list[list[dict]]:
    """Each sweep visit's MoK records in timing order: runs of consecutive records (in each
    file's order) of one workload and routing, other systems (gemm-only) skipped."""
    out: list[list[dict]] = []
    last = None
    for r in records:
        if r.get("system") != "mok" or r.get("source", "measured") != "measured":
            continue
        key = (r.get("_file"), workload_key(r), json.dumps(r["routing"], sort_keys=True))
        if key != last:
            out.append([])
            last = key
        out[-1].append(r)
    return out


def _same_kernel(a: dict, b: dict) -> bool:
    """Whether two records of one workload ran the same kernel but for the minibatch size."""
    ca, cb = a["config"], b["config"]
    return (all(ca.get(k) == cb.get(k) for k in ("dispatch", "combine", "comm_sms", "capacity",
                                                 "macrobatch"))
            and tile_key(a) == tile_key(b))


def busiest_rows(rec: dict) -> float:
    """Routed rows of the busiest GPU at the median timed iteration (analytic.iteration_rows)."""
    scn = record_scenario(rec)
    return float(np.max(iteration_rows(scn, loads(scn))))


def twins(records: list[dict]) -> list[dict]:
    """Pairs (earlier, later in one block) that ran the same kernel on one minibatch each: both
    minibatches at least the busiest GPU's rows, and the ring the same (macrobatch at least
    minibatch + 128 rows for both: mok_kernels KernelConfig raises a smaller ring)."""
    out = []
    for blk in blocks(records):
        rows = None
        for i, a in enumerate(blk):
            for b in blk[i + 1:]:
                if not _same_kernel(a, b):
                    continue
                mbs = (a["config"]["minibatch"], b["config"]["minibatch"])
                if a["config"]["macrobatch"] < max(mbs) + 128:
                    continue
                rows = busiest_rows(a) if rows is None else rows
                if rows > min(mbs):
                    continue
                out.append({"earlier": a["id"], "later": b["id"], "first": i == 0,
                            "positions": [i, blk.index(b)], "tokens": a["tokens"],
                            "file": a.get("_file"), "minibatches": list(mbs),
                            "log_ratio": math.log(a["latency_ms"]["median"]
                                                  / b["latency_ms"]["median"])})
    return out


def summary(values: list[float]) -> dict:
    """n, mean and median of log ratios, the mean's standard error (None below 2)."""
    v = np.asarray(values, dtype=float)
    return {"n": int(v.size), "mean": float(v.mean()) if v.size else None,
            "median": float(np.median(v)) if v.size else None,
            "se": float(v.std(ddof=1) / math.sqrt(v.size)) if v.size > 1 else None}


def report(records: list[dict]) -> dict:
    """The pairs and their summaries (module docstring)."""
    pairs = twins(records)
    groups = {}
    for first in (True, False):
        name = "first" if first else "control"
        mine = [p for p in pairs if p["first"] == first]
        groups[name] = {"all": summary([p["log_ratio"] for p in mine]),
                        f"<= {DECODE_TOKENS}": summary([p["log_ratio"] for p in mine
                                                        if p["tokens"] <= DECODE_TOKENS]),
                        f"> {DECODE_TOKENS}": summary([p["log_ratio"] for p in mine
                                                       if p["tokens"] > DECODE_TOKENS])}
    return {"pairs": pairs, "summary": groups}


def default_residuals(records: list[dict], preds: list[dict]) -> dict:
    """Per block, the default setting's log(measured / predicted) minus the mean of the other
    settings' (analytic predictions matched as calibration.registered does), summarized by
    where the default was timed (first in its block, or later) and by tokens (module
    docstring)."""
    from mok_kernels.space_sweep import DEFAULT_KNOBS

    from .registered import match

    predicted = {r["id"]: p["predicted_ms"] for p, r in
                 match([p for p in preds if p.get("engine") == "analytic"], records)}
    if not predicted:   # n 0 in every row, exit 0, was no answer
        raise MokInputError("--predictions: none of their analytic predictions meets exactly one "
                            "run of the files (same hardware, system, model, EP, tokens, routing, "
                            "pass, precision and knobs, made after the registration)")
    parts = ("all", f"<= {DECODE_TOKENS}", f"> {DECODE_TOKENS}")
    out: dict[str, dict[str, list[float]]] = {w: {k: [] for k in parts}
                                              for w in ("timed first", "timed later")}
    for blk in blocks(records):
        kept = [r for r in blk if r["id"] in predicted]
        dflt = [i for i, r in enumerate(kept)
                if tuple(r["config"].get(k) for k in ("dispatch", "combine", "minibatch",
                                                     "comm_sms")) == DEFAULT_KNOBS]
        if len(kept) < 2 or len(dflt) != 1:
            continue
        res = [math.log(r["latency_ms"]["median"] / predicted[r["id"]]) for r in kept]
        i = dflt[0]
        d = res[i] - float(np.mean(res[:i] + res[i + 1:]))
        where = "timed first" if kept[i] is blk[0] else "timed later"
        out[where]["all"].append(d)
        out[where][parts[1] if blk[0]["tokens"] <= DECODE_TOKENS else parts[2]].append(d)
    return {w: {k: summary(v) for k, v in by.items()} for w, by in out.items()}


def render(doc: dict) -> str:
    def pct(x):
        return "-" if x is None else f"{100 * x:+.2f}%"
    lines = ["earlier / later timing of the same kernel on the same work, log ratio "
             "(mean, median, s.e. of the mean)"]
    for name, label in (("first", "earlier timed first in its workload"),
                        ("control", "neither timed first (control)")):
        for part, s in doc["summary"][name].items():
            se = "-" if s["se"] is None else f"{100 * s['se']:.2f}"
            lines.append(f"  {label:38s} {part:7s} n {s['n']:4d}  mean {pct(s['mean'])}  "
                         f"median {pct(s['median'])}  s.e. {se}")
    if "default_residual" in doc:
        lines.append("default setting's log(measured / predicted) minus its workload's other "
                     "settings' (analytic)")
        for where, by in doc["default_residual"].items():
            for part, s in by.items():
                se = "-" if s["se"] is None else f"{100 * s['se']:.2f}"
                lines.append(f"  {'default ' + where:38s} {part:7s} n {s['n']:4d}  mean "
                             f"{pct(s['mean'])}  median {pct(s['median'])}  s.e. {se}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = doc_parser("python -m calibration.first_timed", __doc__)
    p.add_argument("files", nargs="+", help="run-record files (JSON lines)")
    p.add_argument("--predictions", nargs="+", default=None, metavar="PRED",
                   help="registered predictions of these runs: also the default-minus-rest "
                   "measure")
    p.add_argument("--json", action="store_true", help="one JSON document: pairs and summaries")

    def run(a) -> None:
        records = read_records(a.files)
        if not blocks(records):     # every row n 0, exit 0, was no answer
            raise MokInputError(f"no measured MoK run records in {', '.join(a.files)} (system "
                                f"'mok'): the pairs are MoK settings of one workload")
        doc = report(records)
        if a.predictions:
            from .registered import read_predictions
            preds = read_predictions(*a.predictions)
            doc["default_residual"] = default_residuals(records, preds)
        rows = [g["all"]["n"] for g in doc["summary"].values()]
        rows += [g["all"]["n"] for g in doc.get("default_residual", {}).values()]
        if not any(rows):   # every row n 0, exit 0, was no answer (session 71)
            raise MokInputError(f"nothing to report in {', '.join(a.files)}: no MoK run measured "
                                "twice on the same work" + (" and no workload whose default "
                                "setting and another met a registered prediction"
                                if a.predictions else ""))
        print(json.dumps(doc) if a.json else render(doc))
    return run_tool(p, run, argv)


if __name__ == "__main__":
    sys.exit(main())
