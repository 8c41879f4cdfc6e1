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

from mok_model.cli import MokParser
from mok_model.errors import MokInputError
from mok_model.records import model_key, read_records, record_list_lag


def _setting(rec: dict) -> tuple:
    c = rec["config"]
    return (c.get("dispatch"), c.get("combine"), c.get("minibatch"), c.get("comm_sms"),
            c.get("capacity"),
            record_list_lag(rec), "auto" in rec)


def _workload(rec: dict) -> tuple:
    m = rec["model"]
    return (m["name"] if isinstance(m, dict) else m, model_key(rec), rec["ep"], rec["tokens"],
            rec["routing"]["kind"], rec["pass"], rec["precision"])


def rows(records: list[dict]) -> list[dict]:
    """One row per workload with an automatic pick; each setting at its best run (ms)."""
    best: dict[tuple, dict[tuple, float]] = {}
    for r in records:
        key = (r["system"],) + _setting(r) if r["system"] == "mok" else (r["system"],)
        runs = best.setdefault(_workload(r), {})
        runs[key] = min(runs.get(key, float("inf")), r["latency_ms"]["median"])
    out = []
    for wl, runs in sorted(best.items(), key=lambda kv: str(kv[0])):
        swept = {k: v for k, v in runs.items() if k[0] == "mok" and not k[-1]}
        picks = [(v, k) for k, v in runs.items() if k[0] == "mok" and k[-1]]
        if not picks:
            continue
        if not swept:
            print(f"report_auto: {wl[0]} EP {wl[2]} {wl[3]} tokens: an automatic pick without "
                  "a sweep; left out", file=sys.stderr)
            continue
        pick_ms, pick = min(picks)
        best_ms, best_key = min((v, k) for k, v in swept.items())
        lag1 = [v for k, v in swept.items() if k[6] == 1]
        out.append({"model": wl[0], "ep": wl[2], "tokens": wl[3], "routing": wl[4],
                    "gemm_ms": runs.get(("gemm-only",)), "best_ms": best_ms,
                    "best": {"minibatch": best_key[3], "comm_sms": best_key[4],
                             "list_lag": best_key[6]},
                    "best_lag1_ms": min(lag1) if lag1 else None, "pick_ms": pick_ms,
                    "pick": {"minibatch": pick[3], "comm_sms": pick[4], "list_lag": pick[6]},
                    "pick_over_best": pick_ms / best_ms, "swept": len(swept)})
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
        print(f"report_auto: {exc}", file=sys.stderr)
        return 2
    if a.markdown:
        print("| workload (EP, tokens) | GEMMs alone | best swept (minibatch, comm SMs, lag) "
              "| best at lag 1 | automatic pick (minibatch, comm SMs, lag) | pick / best |")
        print("|---|---:|---:|---:|---:|---:|")
    for r in table:
        b, p = r["best"], r["pick"]
        cells = (f"{r['model']} ({r['ep']}, {r['tokens']})", _ms(r["gemm_ms"]),
                 f"{r['best_ms']:.3f} ({b['minibatch']}, {b['comm_sms']}, {b['list_lag']})",
                 _ms(r["best_lag1_ms"]),
                 f"{r['pick_ms']:.3f} ({p['minibatch']}, {p['comm_sms']}, {p['list_lag']})",
                 f"{r['pick_over_best']:.3f}")
        print("| " + " | ".join(cells) + " |" if a.markdown else "  ".join(cells))
    worst = max(r["pick_over_best"] for r in table)
    print(f"{'' if not a.markdown else chr(10)}pick / best: worst {worst:.3f} over {len(table)} "
          f"workloads, {sum(r['pick_over_best'] <= 1.03 for r in table)} within 3%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
