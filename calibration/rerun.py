"""Run-to-run repeatability: runs measured twice, each measurement scored as the other's
prediction, beside the model on the same runs. What a second run of the same runs reproduces is
the most any model of the kernel can reproduce of them (calibration/noise.py's ceiling re-draws
one run's iterations and so misses the drift between runs; this one does not).

    python -m calibration.rerun --first A.jsonl [B.jsonl ...] --second C.jsonl [...] \\
        [--params FILE]

Two records are the same run when they measured the same workload (records.workload_key: model,
EP, tokens, routing with its seed and zipf order, pass, precision, the zero shared slot, the down
split, the work-list lag) with the same routing fields as recorded (a hot record of the old draw,
without "draw": "model", is another run than one of today's), system, knobs and kernel tiles (a
record without `group_m` in its tiles predates it: 1). Where one side measured a run several
times, its latest record stands for it. Printed per system: how many runs both sides measured,
the median ratio second / first with its 10th and 90th percentiles, and the figures of
calibration.registered (MAPE, max, signed range; for MoK Spearman within workloads of 3+ settings
and the regret of the pick among each workload's settings) of the first side as a prediction of
the second, the second of the first, and the model (parameters of the records' hardware, or
--params) of each.
"""

from __future__ import annotations

import json
import sys

import numpy as np

from mok_model.cli import doc_parser, run_tool
from mok_model.errors import MokInputError
from mok_model.records import (KNOBS, predictable, read_records, record_where, shared_record,
                               workload_key)

from .registered import figures, pick_regrets
from .scoring import predict_shipped
from .validate import evaluate

TILES = ("block_m", "bn_gu", "bn_dn", "num_warps", "num_stages", "group_m")


def tile_key(rec: dict) -> tuple:
    """A record's kernel tiles (TILES; group_m 1 where the record names none)."""
    tiles = rec.get("tiles") or {}
    return tuple(tiles.get(k, 1 if k == "group_m" else None) for k in TILES)


def run_key(rec: dict) -> tuple:
    """What identifies a run across measurements (module docstring)."""
    cfg = rec.get("config") or {}
    return (rec["system"], workload_key(rec), json.dumps(rec["routing"], sort_keys=True),
            *(cfg.get(k) for k in KNOBS), *tile_key(rec))


def _by_run(records: list[dict]) -> dict[tuple, list[dict]]:
    """Each run's records, oldest first (by date; on equal dates in the files' order)."""
    runs: dict[tuple, list[dict]] = {}
    for r in records:
        runs.setdefault(run_key(r), []).append(r)
    return {k: sorted(v, key=lambda r: r["date"]) for k, v in runs.items()}


def latest(records: list[dict]) -> dict[tuple, dict]:
    """Each run's latest record (by date; on equal dates the later in the files)."""
    return {k: v[-1] for k, v in _by_run(records).items()}


def repeated(records: list[dict]) -> list[tuple[dict, dict]]:
    """(older, newer) of the latest two records of every run measured at least twice among
    `records` (one set of files holding a sweep and its re-measurement)."""
    return [(v[-2], v[-1]) for v in _by_run(records).values() if len(v) >= 2]


def ceiling(both: list[tuple[dict, dict]]) -> dict | None:
    """The first record of each pair as a prediction of the second, MoK runs: n, MAPE, max,
    Spearman within workloads (3+ settings), regret of the pick (workloads of 2+ settings);
    None where no MoK run is in the pairs."""
    mok = [(a, b) for a, b in both if b["system"] == "mok"]
    if not mok:
        return None
    recs, pred = [b for _, b in mok], [a["latency_ms"]["median"] for a, _ in mok]
    v = evaluate(recs, [r["latency_ms"]["median"] for r in recs], pred)
    reg = pick_regrets(recs, pred)
    return {"n": v.n, "mape": v.mape, "max_ape": v.max_ape, "spearman": v.spearman,
            "spearman_groups": v.groups, "regret_workloads": len(reg),
            "regret_mean": float(np.mean(reg)) if reg else None,
            "regret_max": float(np.max(reg)) if reg else None}


def pairs(first: list[dict], second: list[dict]) -> list[tuple[dict, dict]]:
    """(first, second) records of every run both sides measured, in the second side's order."""
    a, b = latest(first), latest(second)
    return [(a[k], b[k]) for k in b if k in a]


def report(first: list[dict], second: list[dict], params_path: str | None = None) -> list[str]:
    """The report's lines (module docstring)."""
    both = pairs(first, second)
    if not both:
        raise MokInputError("no run was measured on both sides (same workload, system, knobs "
                            "and tiles)")
    lines = []
    for system in sorted({b["system"] for _, b in both}):
        sub = [(a, b) for a, b in both if b["system"] == system]
        a_ms = [a["latency_ms"]["median"] for a, _ in sub]
        b_ms = [b["latency_ms"]["median"] for _, b in sub]
        ratio = np.sort(np.divide(b_ms, a_ms))
        q10, q50, q90 = np.quantile(ratio, [0.1, 0.5, 0.9])
        ranking = system in ("mok", "mok-gemm")
        lines += [f"{system}: {len(sub)} runs measured twice; second / first median {q50:.3f} "
                  f"(p10 {q10:.3f}, p90 {q90:.3f})",
                  f"  first as a prediction of second : "
                  f"{figures([b for _, b in sub], a_ms, ranking)}",
                  f"  second as a prediction of first : "
                  f"{figures([a for a, _ in sub], b_ms, ranking)}"]
        model = [(a, b) for a, b in sub if predictable(b)]
        for side, name in ((1, "second"), (0, "first")) if model else ():
            recs = [pair[side] for pair in model]
            pred = predict_shipped(recs, params_path)
            ok = np.isfinite(pred)
            lines.append(f"  model of {name:6s} ({len(recs)} runs)    : "
                         f"{figures([r for r, o in zip(recs, ok) if o], pred[ok], ranking)}")
    return lines


def main(argv: list[str] | None = None) -> int:
    p = doc_parser("python -m calibration.rerun", __doc__)
    p.add_argument("--first", nargs="+", required=True, help="run-record files of the first run")
    p.add_argument("--second", nargs="+", required=True,
                   help="run-record files of the second run")
    p.add_argument("--params", default=None, help="parameters file for the model's lines")
    return run_tool(p, _run, argv)


def _run(a) -> None:
    first, second = read_records(a.first), read_records(a.second)
    if both := shared_record(first, second):  # one measurement on both sides: MAPE 0
        again, twin = both
        raise MokInputError(f"{record_where(again)}: record {again['id']!r} is also in --first "
                            f"({record_where(twin)}); the two sides are two runs' records")
    print("\n".join(report(first, second, a.params)))


if __name__ == "__main__":
    sys.exit(main())
