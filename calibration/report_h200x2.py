"""The real 2-GPU report (docs/calibration.md, "Real 2-GPU runs"): registered predictions against
the runs, then held-out figures of the h200-hgx8 fit.

    python -m calibration.report_h200x2

1. calibration/predictions/h200x2_*.jsonl (committed before the runs) against the MoK records of
   calibration/runs/h200x2/bench_*.jsonl: signed error per run, MAPE and max per engine.
2. The fabric fitted to the NVLink microbenchmarks, then the library GEMM (gemm-only records) and
   the layer terms (calibration/defaults.py fit_h200x2_layers) refitted without one token count /
   one model at a time (its gemm-only records left out too) and predicted on it: MAPE,
   max error, grouped Spearman, and tuner regret (the model's pick among the measured MoK
   configurations of a held-out workload against the best measured one).
3. The fabric transfer (calibration.transfer --write-fabric: h200-1's fit and GEMM table with the
   NVLink fabric measured, no term fitted to these runs) on every MoK run, both engines.
4. Model-free: each real run over the same rank emulated on one GPU with the same knobs.
5. Beside (never instead of) Spearman and regret, what measurement noise allows
   (calibration/noise.py): the Spearman a perfect model would expect against these records (two
   re-draws of every median from its own iterations), the share of the pairs the records resolve
   (p10-p90 intervals disjoint) that the model orders right, and the regret among the
   configurations of one bench command (no run-to-run drift between them).
"""

from __future__ import annotations

import collections
import json
import sys
from pathlib import Path

import numpy as np

from mok_model.cli import doc_parser, run_tool
from mok_model.presets import load_hardware
from mok_model.records import model_key, predictable, read_records, record_files, routing_reproduced, routing_spec

from .defaults import H200X2, fit_h200x2_layers
from .fit import workload_key
from .fit_gemm import gemm_only_ms
from .fit_fabric import fit_fabric
from .noise import noise_ceiling, pick_key, resolved_pairs, within_run_regret
from .priors import HOPPER, prior_params
from .registered import report
from .transfer import fabric_params
from .validate import evaluate, validate

PREDICTIONS = Path(__file__).parent / "predictions"


def registered(runs: list[dict], pattern: str = "h200x2_*.jsonl") -> None:
    """Each registration file against the runs it was made for (calibration.registered)."""
    report([str(p) for p in sorted(PREDICTIONS.glob(pattern))], runs)


def held_out_fits(runs: list[dict]) -> dict:
    """(key, held-out value) -> the layer parameters fitted without the records of that token
    count or model (its gemm-only records too), for key "tokens" and "model"."""
    micro = read_records(record_files(H200X2, "nvlink_micro_*.jsonl"))
    fab = fit_fabric(micro, prior_params("h200-hgx8", HOPPER), load_hardware("h200-hgx8"))
    layer = [r for r in runs if r["system"] in ("mok", "nccl-torch") and predictable(r)]
    fits = {}
    for by in ("tokens", "model"):
        for g in sorted({str(r[by]) for r in layer}):
            fits[by, g] = fit_h200x2_layers([r for r in runs if str(r[by]) != g], fab.params,
                                            held=fab.fitted)[1].params
    return fits


def held_out(runs: list[dict]) -> None:
    layer = [r for r in runs if r["system"] in ("mok", "nccl-torch") and predictable(r)]
    fits = held_out_fits(runs)
    for by in ("tokens", "model"):  # the library GEMM's own records, held out the same way
        errs = [gemm_only_ms(r, fits[by, str(r[by])]) / r["latency_ms"]["median"] - 1
                for r in runs if r["system"] == "gemm-only" and routing_reproduced(r)
                and (by, str(r[by])) in fits]
        print(f"gemm-only held out by {by:6s}: n {len(errs)} MAPE "
              f"{100 * sum(map(abs, errs)) / len(errs):.1f}% max {100 * max(map(abs, errs)):.1f}%")
    mok = [r for r in layer if r["system"] == "mok"]
    nc = noise_ceiling(mok)
    spread = sorted(w["noise"] for w in nc["workloads"].values())
    print(f"noise: Spearman of two re-draws of the measured medians (perfect model) "
          f"{nc['ceiling']:.2f} over {nc['groups']} workloads (min "
          f"{min(w['ceiling'] for w in nc['workloads'].values()):.2f}); p10-p90 spread median "
          f"{100 * spread[len(spread) // 2]:.1f}% of the median")
    for engine in ("analytic", "sim"):
        for by in ("tokens", "model"):
            recs, pred = [], []
            for g in sorted({str(r[by]) for r in layer}):
                test = [r for r in layer if str(r[by]) == g]
                recs += test
                pred += [x["predicted_ms"] for x in validate(test, fits[by, g], engine).rows]
            print_figures(f"{engine:8s} held out by {by:6s}", recs, pred)


def print_figures(label: str, recs: list[dict], pred: list[float]) -> None:
    """MAPE (per system), max error, grouped Spearman and tuner regret of `pred` against `recs`,
    then what the records resolve (calibration.noise)."""
    ev = evaluate(recs, [r["latency_ms"]["median"] for r in recs], pred)
    per = collections.defaultdict(list)
    for r, q in zip(recs, pred):
        if r["system"] == "mok":
            per[workload_key(r)].append((pick_key(r, q), r["latency_ms"]["median"]))
    # the pick: fastest predicted, exact ties as the tuner breaks them (not by the measurement,
    # which min over (predicted, measured) pairs would do)
    regrets = [min(rows, key=lambda x: x[0])[1] / min(m for _, m in rows) - 1
               for rows in per.values()]
    rho = "n/a" if ev.spearman is None else f"{ev.spearman:.2f}"
    per_sys = "; ".join(
        f"{s} {100 * sum(x['ape'] for r, x in zip(recs, ev.rows) if r['system'] == s) / n:.1f}%"
        for s in ("mok", "nccl-torch") if (n := sum(r["system"] == s for r in recs)))
    print(f"{label}: n {ev.n} MAPE {100 * ev.mape:.1f}% ({per_sys}) max {100 * ev.max_ape:.1f}% "
          f"Spearman {rho} ({ev.groups} groups); regret max {100 * max(regrets):.1f}% mean "
          f"{100 * sum(regrets) / len(regrets):.1f}% over {len(regrets)} workloads")
    ix = [i for i, r in enumerate(recs) if r["system"] == "mok"]
    rp = resolved_pairs([recs[i] for i in ix], [pred[i] for i in ix])
    wr = within_run_regret([recs[i] for i in ix], [pred[i] for i in ix])
    print(f"{'':8s} beside it: resolved pairs ordered right {100 * rp['concordant']:.1f}% "
          f"({rp['resolved']} of {rp['pairs']} pairs resolved); regret within one bench "
          f"command max {100 * wr['max']:.1f}% mean {100 * wr['mean']:.1f}% over "
          f"{wr['groups']} groups")


def transfer(runs: list[dict]) -> None:
    """The fabric transfer (calibration.transfer.fabric_params: h200-1's fit with the measured
    NVLink fabric, nothing fitted to these runs) on every MoK run: all of them held out."""
    params = fabric_params()
    mok = [r for r in runs if r["system"] == "mok" and predictable(r)]
    for engine in ("analytic", "sim"):
        pred = [x["predicted_ms"] for x in validate(mok, params, engine).rows]
        signed = sum(q / r["latency_ms"]["median"] - 1 for r, q in zip(mok, pred)) / len(mok)
        print_figures(f"{engine:8s} transfer (no 2-GPU layer fit), mean signed "
                      f"{100 * signed:+.1f}%", mok, pred)


def real_over_emulated(runs: list[dict]) -> None:
    """Model-free: each real 2-GPU MoK run over the same rank's run emulated on one GPU with the
    same workload and knobs (emulated_same_rank*.jsonl, measured the same day): issue 10's
    "real <= 1.05x emulated". Median (min-max) overall and per combine x comm SMs."""
    def key(r: dict) -> tuple:
        return (model_key(r), r["ep"], r["tokens"], routing_spec(r), json.dumps(r["config"],
                                                                               sort_keys=True))
    emulated = {key(r): r["latency_ms"]["median"] for r in
                read_records(record_files(H200X2, "emulated_same_rank*.jsonl"))
                if r["system"] == "mok"}
    by: dict[str, list[float]] = collections.defaultdict(list)
    for r in runs:
        if r["system"] == "mok" and key(r) in emulated:
            x = r["latency_ms"]["median"] / emulated[key(r)]
            by["all"].append(x)
            by[f"{r['config']['combine']} combine, {r['config']['comm_sms']} comm SMs"].append(x)
    for name, xs in sorted(by.items(), key=lambda kv: kv[0] != "all"):
        print(f"real / emulated same rank, {name}: n {len(xs)} median {np.median(xs):.3f} "
              f"({min(xs):.3f}-{max(xs):.3f})")


def main() -> None:
    runs = read_records(record_files(H200X2, "bench_*.jsonl"))
    registered(runs)
    held_out(runs)
    transfer(runs)
    real_over_emulated(runs)


if __name__ == "__main__":
    sys.exit(run_tool(doc_parser("python -m calibration.report_h200x2", __doc__), lambda a: main()))
