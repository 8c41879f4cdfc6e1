"""The automatic pick on hardware: for each workload of `mok bench --auto` records, the GEMMs
alone, the best swept setting, the best at lag 1, the automatic pick and pick / best.

    python -m calibration.report_auto RUNS [RUNS ...] [--markdown]

Several files of the same sweep (runs timed again) are joined setting by setting, each setting
and the pick taking its better run, so one slow run does not make a regret; a single file reads as
that run alone. Records without an automatic pick are swept settings; workloads without a pick
are left out, and one with a pick but no sweep is named on stderr.
"""

from __future__ import annotations

import argparse
import sys
from typing import NamedTuple

from mok_model.cli import MokParser
from mok_model.errors import MokInputError
from mok_model.records import model_key, read_records, record_list_lag, routing_spec


class Setting(NamedTuple):
    """One MoK record's knobs and lag, and whether it is the automatic pick."""

    dispatch: str
    combine: str
    minibatch: int
    comm_sms: int
    capacity: float
    list_lag: int
    auto: str       # "" swept; a pick: the routing its knobs were chosen for (PICKS: the default)

    def knobs(self) -> dict:
        return {"minibatch": self.minibatch, "comm_sms": self.comm_sms, "list_lag": self.list_lag}


# the layer's own pick (not told the routing): "robust" since session 44; records written before
# name no routing, their pick was chosen for uniform routing
OLD_DEFAULT = "uniform (default before session 44)"
PICKS = ("robust", OLD_DEFAULT)


class Workload(NamedTuple):
    model: str
    key: str       # records.model_key: a model given by its shape is told apart by it
    ep: int
    tokens: int
    routing: str
    pass_: str
    precision: str
    spec: tuple    # the routing with its argument and seed: hot:0.1 and hot:0.05 are two workloads


def _setting(rec: dict) -> Setting:
    c = rec["config"]
    return Setting(c.get("dispatch"), c.get("combine"), c.get("minibatch"), c.get("comm_sms"),
                   c.get("capacity"), record_list_lag(rec),
                   rec["auto"].get("knob_routing", OLD_DEFAULT) if "auto" in rec else "")


def _workload(rec: dict) -> Workload:
    m = rec["model"]
    return Workload(m["name"] if isinstance(m, dict) else m, model_key(rec), rec["ep"],
                    rec["tokens"], rec["routing"]["kind"], rec["pass"], rec["precision"],
                    (routing_spec(rec), int(rec["routing"].get("seed", 0))))


def rows(records: list[dict]) -> list[dict]:
    """One row per workload with an automatic pick; each setting at its best run (ms). The
    records are of one hardware (a row names no hardware, and a pick is judged by its own)."""
    presets = sorted({(r.get("hardware") or {}).get("preset") for r in records
                      if r["system"] in ("mok", "gemm-only")} - {None})
    if len(presets) > 1:
        raise MokInputError(f"the records span hardware {presets}: a pick is judged against "
                            f"the sweep of its own hardware; give one hardware's files")
    mok: dict[Workload, dict[Setting, float]] = {}
    gemm: dict[Workload, float] = {}
    for r in records:
        if r["system"] not in ("mok", "gemm-only"):   # microbenchmarks name no layer
            continue
        ms, wl = r["latency_ms"]["median"], _workload(r)
        if r["system"] == "mok":
            runs = mok.setdefault(wl, {})
            s = _setting(r)
            runs[s] = min(runs.get(s, float("inf")), ms)
        elif r["system"] == "gemm-only":
            gemm[wl] = min(gemm.get(wl, float("inf")), ms)
    out = []
    for wl, runs in sorted(mok.items(), key=lambda kv: str(kv[0])):
        swept = {s: v for s, v in runs.items() if not s.auto}
        picks = [(v, s) for s, v in runs.items() if s.auto in PICKS]
        told = [(v, s) for s, v in runs.items() if s.auto not in ("", *PICKS)]
        if not picks:
            continue
        if not swept:
            print(f"report_auto: {wl.model} EP {wl.ep} {wl.tokens} tokens: an automatic pick "
                  "without a sweep; left out", file=sys.stderr)
            continue
        pick_ms, pick = min(picks)
        best_ms, best = min((v, s) for s, v in swept.items())
        lag1 = [v for s, v in swept.items() if s.list_lag == 1]
        out.append({"model": wl.model, "ep": wl.ep, "tokens": wl.tokens, "routing": wl.routing,
                    "gemm_ms": gemm.get(wl), "best_ms": best_ms, "best": best.knobs(),
                    "best_lag1_ms": min(lag1) if lag1 else None, "pick_ms": pick_ms,
                    "pick": pick.knobs(), "pick_over_best": pick_ms / best_ms,
                    "told_ms": min(told)[0] if told else None,
                    "told_over_best": min(told)[0] / best_ms if told else None,
                    "swept": len(swept)})
    return out


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v:.3f}"


def main(argv: list[str] | None = None) -> int:
    ap = MokParser(prog="python -m calibration.report_auto", description=__doc__,
                   formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+", help="run-record files of `mok bench --auto`")
    ap.add_argument("--markdown", action="store_true", help="a Markdown table")
    try:
        a = ap.parse_args(argv)
        table = rows(read_records(a.runs))
        if not table:
            raise MokInputError(f"no automatic pick with a sweep in {', '.join(a.runs)}")
    except MokInputError as exc:
        print(f"{ap.prog}: error: {exc}", file=sys.stderr)
        return 2
    told = any(r["told_ms"] is not None for r in table)   # picks told the routing (--auto-hint)
    if a.markdown:
        print("| workload (EP, tokens) | GEMMs alone | best swept (minibatch, comm SMs, lag) "
              "| best at lag 1 | automatic pick (minibatch, comm SMs, lag) | pick / best |"
              + (" told the routing / best |" if told else ""))
        print("|---|---:|---:|---:|---:|---:|" + ("---:|" if told else ""))
    for r in table:
        b, p = r["best"], r["pick"]
        cells = (f"{r['model']} ({r['ep']}, {r['tokens']})", _ms(r["gemm_ms"]),
                 f"{r['best_ms']:.3f} ({b['minibatch']}, {b['comm_sms']}, {b['list_lag']})",
                 _ms(r["best_lag1_ms"]),
                 f"{r['pick_ms']:.3f} ({p['minibatch']}, {p['comm_sms']}, {p['list_lag']})",
                 f"{r['pick_over_best']:.3f}")
        if told:
            cells += ("-" if r["told_over_best"] is None else f"{r['told_over_best']:.3f}",)
        print("| " + " | ".join(cells) + " |" if a.markdown else "  ".join(cells))
    worst = max(r["pick_over_best"] for r in table)
    gap = "\n" if a.markdown else ""
    print(f"{gap}pick / best: worst {worst:.3f} over {len(table)} workloads, "
          f"{sum(r['pick_over_best'] <= 1.03 for r in table)} within 3%")
    ratios = [r["told_over_best"] for r in table if r["told_over_best"] is not None]
    if ratios:
        print(f"told the routing: worst {max(ratios):.3f} over {len(ratios)} workloads, "
              f"{sum(x <= 1.03 for x in ratios)} within 3%")
    for line in by_routing(table):
        print(line)
    return 0


def by_routing(table: list[dict]) -> list[str]:
    """Per routing kind, where the rows hold more than one: the pick's (and the told pick's)
    range over the best swept and how many are within 3%."""
    kinds = sorted({r["routing"] for r in table})
    if len(kinds) < 2:
        return []
    out = []
    for kind in kinds:
        rows = [r for r in table if r["routing"] == kind]
        pick = [r["pick_over_best"] for r in rows]
        told = [r["told_over_best"] for r in rows if r["told_over_best"] is not None]
        line = (f"  {kind}: pick {min(pick):.3f}-{max(pick):.3f} over {len(pick)} workloads, "
                f"{sum(x <= 1.03 for x in pick)} within 3%")
        if told:
            line += (f"; told {min(told):.3f}-{max(told):.3f}, "
                     f"{sum(x <= 1.03 for x in told)} within 3%")
        out.append(line)
    return out


if __name__ == "__main__":
    sys.exit(main())
