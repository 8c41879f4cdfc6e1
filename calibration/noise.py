"""Ranking against measurement noise: how well can any model rank the configurations of one
workload when the measurements themselves move from run to run?

Plain Spearman within a workload (calibration/validate.py) compares the model's order with the
measured medians' order. When a workload's configurations differ by less than the run-to-run
spread of one configuration, the measured order is itself partly noise: a second run of the
same grid would not reproduce it, and no model reaches a Spearman of 1 (nor 0.9) against it.
This module measures that and scores the model on what the records can resolve. Its figures go
BESIDE plain Spearman and regret, never instead of them:

- `noise_ceiling`: the Spearman that a perfect model would expect against these records: per
  workload, the rank correlation between two independent re-draws of every configuration's median
  (each a median of its own iterations resampled with replacement, from the per-iteration times
  of the slowest rank that multi-GPU records carry). Re-draws from one run's iterations miss
  run-to-run drift, so the ceiling is an upper bound on what the records allow.
- `drift_ceiling`: the same expectation with run-to-run drift instead of iteration noise: per
  workload, the rank correlation between the measured medians and the medians each moved by
  its own drift, drawn log-normal with the run-to-run SD of the workload's token band
  (`drift_sd`, from runs measured twice: calibration/rerun.py `repeated`). It assumes the drift
  independent across configurations, log-normal, and one SD per band; it estimates what a
  second run of every configuration would reproduce of the first's order, for every workload
  (calibration/rerun.py's `ceiling` measures that on the re-measured workloads alone).
- `drift_regret`: the tuner regret a perfect model would still show against these records: per
  workload, the best measured configuration (what a model that knew the kernel exactly would
  pick, as far as one run tells) timed again with every configuration moved by its drift, over
  the best of that second run. The same assumptions as `drift_ceiling`; its expected maximum
  over workloads is the floor under report_space's regret max.
- `resolved_pairs`: of the pairs of configurations inside a workload whose p10-p90 intervals do not
  overlap (the records tell them apart), the share the model orders as measured.

    python -m calibration.noise RUN_FILES... [--table-system gemm-only|mok-gemm] [--json]

prints the drift SD of each token band (tokens per GPU, the record's `tokens`: <= 128, <= 512,
<= 2048, > 2048) from the MoK runs measured twice among the files, with its number of pairs, the
drift ceiling of the files' MoK workloads (>= 3 configurations), pooled and per band, and the
drift regret floor (workloads of >= 4 configurations), pooled and per band. With
--table-system, of the MoK runs calibration.report_space scores with that --table-system
(`usable`: h200-1 forward runs of the tile of their workload's GEMM phases and of a zipf order
the model draws), so that the ceiling sits beside its Spearman; without it, of every MoK record
in the files (other tiles of a workload then count among its configurations).
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import sys

import numpy as np
from scipy.stats import rankdata

from mok_model.cli import doc_parser, run_tool
from mok_model.errors import MokInputError
from mok_model.records import read_records, workload_key
from mok_model.tuner import tie_rounded

from .checks import required_text
from .validate import spearman

# token bands of the drift SD (tokens per GPU, the record's `tokens`): (label, largest tokens)
BANDS = (("<=128", 128), ("<=512", 512), ("<=2048", 2048), (">2048", math.inf))


def iteration_times(rec: dict) -> np.ndarray:
    """Per-iteration latency (ms) of a record: the slowest rank of each iteration (`rank_ms`), or
    `latency_ms.samples`; empty when the record holds neither."""
    if rec.get("rank_ms"):
        return np.max(np.asarray(rec["rank_ms"], float), axis=0)
    return np.asarray(rec["latency_ms"].get("samples") or [], float)


def _groups(records: list[dict]) -> dict[tuple, list[int]]:
    """{workload + system: indices of its records} for workloads of >= 3 records, in a canonical
    order (workloads by their key's text, records by id), never the order the files or records
    come in: the ceilings' random draws are handed out in this order."""
    out: dict[tuple, list[int]] = collections.defaultdict(list)
    for i, r in enumerate(records):
        out[workload_key(r) + (r["system"],)].append(i)
    return {k: sorted(out[k], key=lambda i: records[i]["id"])
            for k in sorted(out, key=repr) if len(out[k]) >= 3}


def noise_ceiling(records: list[dict], draws: int = 200, seed: int = 0) -> dict:
    """Expected within-workload Spearman of two independent re-draws of the measured medians
    (see the module docstring): mean over workloads with >= 3 configurations whose records all
    carry iteration times, plus each workload's value and its relative spread (p10-p90 over the
    median, median over its records) beside the spread of its configurations (slowest over
    fastest median, minus 1)."""
    rng = np.random.default_rng(seed)
    per = {}
    for key, ix in _groups(records).items():
        times = [iteration_times(records[i]) for i in ix]
        if any(len(t) < 2 for t in times):
            continue
        vals = []
        for _ in range(draws):
            a = [np.median(rng.choice(t, len(t))) for t in times]
            b = [np.median(rng.choice(t, len(t))) for t in times]
            rho = spearman(a, b)
            if not math.isnan(rho):
                vals.append(rho)
        med = np.array([records[i]["latency_ms"]["median"] for i in ix])
        spread = np.median([(records[i]["latency_ms"]["p90"] - records[i]["latency_ms"]["p10"])
                            / records[i]["latency_ms"]["median"] for i in ix])
        per[key] = {"ceiling": float(np.mean(vals)) if vals else math.nan,
                    "noise": float(spread), "configs_spread": float(med.max() / med.min() - 1)}
    good = [v["ceiling"] for v in per.values() if not math.isnan(v["ceiling"])]
    return {"ceiling": float(np.mean(good)) if good else None, "groups": len(good),
            "workloads": per}


def band(tokens: int) -> str:
    """The BANDS label of a token count."""
    return next(label for label, top in BANDS if tokens <= top)


def robust_sd(x) -> float:
    """1.4826 x the median absolute deviation: the SD of a normal sample, not moved by a few
    outliers."""
    x = np.asarray(x, float)
    return float(1.4826 * np.median(np.abs(x - np.median(x))))


def drift_sd(pairs: list[tuple[dict, dict]]) -> dict[str, tuple[float, int]]:
    """Run-to-run drift per token band (BANDS, by the newer record's tokens): the robust SD of
    log(newer median / older median) over (older, newer) records of one run (calibration.rerun
    `repeated`), and the number of pairs; bands without a pair are absent. An estimate of the
    SD of one configuration's log median from one run to the next, assumed one per band."""
    logs: dict[str, list[float]] = collections.defaultdict(list)
    for a, b in pairs:
        logs[band(b["tokens"])].append(math.log(b["latency_ms"]["median"]
                                                / a["latency_ms"]["median"]))
    return {label: (robust_sd(logs[label]), len(logs[label])) for label, _ in BANDS
            if logs[label]}


def _rank_corr(x, ys: np.ndarray) -> np.ndarray:
    """validate.spearman of x against each row of ys (x not constant)."""
    rx = rankdata(x)
    rx = rx - rx.mean()
    ry = rankdata(ys, axis=1)
    ry = ry - ry.mean(axis=1, keepdims=True)
    den = np.sqrt((rx * rx).sum() * (ry * ry).sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, ry @ rx / den, np.nan)


def _drifted(records: list[dict], sd_by_band: dict, draws: int, seed: int, keep) -> tuple:
    """([(workload key, band, measured medians, `draws` x configs medians each moved by its
    band's drift)], workloads left out for a band without an SD) over the MoK workloads of
    >= 3 configurations (`_groups`) whose medians `keep` takes; one generator seeded `seed`,
    drawn in `_groups`' order (drift_ceiling and drift_regret: module docstring)."""
    rng = np.random.default_rng(seed)
    mok = [r for r in records if r["system"] == "mok"]
    sds = {k: float(v[0] if isinstance(v, (tuple, list)) else v) for k, v in sd_by_band.items()}
    out, no_sd = [], 0
    for key, ix in _groups(mok).items():
        med = np.array([mok[i]["latency_ms"]["median"] for i in ix], float)
        if not keep(med):
            continue
        label = band(mok[ix[0]]["tokens"])
        if label not in sds:
            no_sd += 1
            continue
        out.append((key, label, med, med * np.exp(rng.normal(0.0, sds[label], (draws, len(ix))))))
    return out, no_sd


def drift_ceiling(records: list[dict], sd_by_band: dict, draws: int = 200,
                  seed: int = 0) -> dict:
    """Expected within-workload Spearman of the measured medians against the same medians each
    times exp(N(0, sd)), sd the drift of the workload's token band (`drift_sd`: a dict band ->
    (sd, n) or band -> sd); an estimate of how well a second run of every configuration ranks
    the first, assuming the drift log-normal, independent across configurations and one SD per
    band. Over the MoK workloads of >= 3 configurations whose medians differ (`_groups`; every
    record is one, as in report_space's Spearman: a run measured twice counts twice):
    `draws` draws each from numpy's Generator seeded `seed`; the mean over workloads
    (`ceiling`), their number (`groups`), each band's mean and number (`bands`), each
    workload's value (`workloads`), and how many workloads had no SD for their band (`no_sd`:
    left out)."""
    drifted, no_sd = _drifted(records, sd_by_band, draws, seed, lambda med: np.ptp(med) > 0)
    per = {key: {"ceiling": float(np.nanmean(_rank_corr(med, moved))), "band": label,
                 "configs": len(med)} for key, label, med, moved in drifted}
    bands = {}
    for label, _ in BANDS:
        vals = [v["ceiling"] for v in per.values() if v["band"] == label]
        if vals:
            bands[label] = {"ceiling": float(np.mean(vals)), "groups": len(vals)}
    vals = [v["ceiling"] for v in per.values()]
    return {"ceiling": float(np.mean(vals)) if vals else None, "groups": len(vals),
            "bands": bands, "no_sd": no_sd, "workloads": per}


def drift_regret(records: list[dict], sd_by_band: dict, min_configs: int = 4, draws: int = 200,
                 seed: int = 0) -> dict:
    """Tuner regret a perfect model would expect against run-to-run drift (module docstring):
    per MoK workload of >= `min_configs` configurations, the configuration of the fastest
    measured median, timed in a second run drawn as drift_ceiling draws it (each median times
    exp(N(0, sd)), sd of the workload's token band), over that run's fastest, minus 1.
    `mean`: the mean over workloads of each one's expected regret; `max`: the expected largest
    regret over all workloads (per draw, the maximum over workloads, then the mean over draws:
    the counterpart of a report's regret max); `share_over`: the expected share of workloads
    above each of 1 %, 3 % and 10 %; per band the same mean and max. Workloads of a band
    without an SD are left out (`no_sd`)."""
    drifted, no_sd = _drifted(records, sd_by_band, draws, seed, lambda med: len(med) >= min_configs)
    rows = [moved[:, int(np.argmin(med))] / moved.min(axis=1) - 1 for _, _, med, moved in drifted]
    labels = [label for _, label, _, _ in drifted]
    if not rows:
        return {"workloads": 0, "mean": None, "max": None, "share_over": {}, "bands": {},
                "no_sd": no_sd}
    reg = np.array(rows)                       # workloads x draws
    labels = np.array(labels)

    def summary(r: np.ndarray) -> dict:
        return {"workloads": int(r.shape[0]), "mean": float(r.mean()),
                "max": float(r.max(axis=0).mean())}

    return {**summary(reg), "no_sd": no_sd,
            "share_over": {f"{t:g}": float((reg > t).mean()) for t in (0.01, 0.03, 0.10)},
            "bands": {label: summary(reg[labels == label]) for label, _ in BANDS
                      if (labels == label).any()}}


def disjoint(a: dict, b: dict) -> bool:
    """Whether two records' latency_ms p10-p90 intervals do not overlap (the records resolve
    which of the two is faster)."""
    return a["p90"] < b["p10"] or b["p90"] < a["p10"]


def resolved_pairs(records: list[dict], predicted) -> dict:
    """Pairs of configurations inside a workload that the records resolve (p10-p90 intervals
    disjoint), how many of them, and the share the predictions order as measured."""
    predicted = np.asarray(predicted, float)
    total = resolved = right = 0
    for ix in _groups(records).values():
        for a in range(len(ix)):
            for b in range(a + 1, len(ix)):
                i, j = ix[a], ix[b]
                li, lj = records[i]["latency_ms"], records[j]["latency_ms"]
                total += 1
                if disjoint(li, lj):
                    resolved += 1
                    right += (li["median"] < lj["median"]) == (predicted[i] < predicted[j])
    return {"pairs": total, "resolved": resolved,
            "concordant": right / resolved if resolved else None}


def pick_key(rec: dict, predicted: float) -> tuple:
    """Sort key of the model's pick among measured configurations: the fastest prediction, and
    on a tie (equal to tuner.TIE_DIGITS significant digits: tie_rounded) the tuner's own grid
    order (mok_model/tuner.py knob_grid: the published pull dispatch, then push combine, then the
    smaller minibatch, fewer comm SMs, smaller ring and capacity), never the measurement."""
    c = rec["config"]
    return (float(tie_rounded(predicted)), c.get("dispatch") != "pull", c.get("combine") != "push",
            *(c.get(k) or 0 for k in ("minibatch", "comm_sms", "macrobatch", "capacity")))


def within_run_regret(records: list[dict], predicted) -> dict:
    """Tuner regret counted only among configurations timed by one bench command (records
    with the same workload and the same `note`, which holds the command line): the model's
    pick among them against the best of them. Configurations from different runs also differ
    by the runs' drift (clocks, machine, kernel build), which no model of the kernel predicts."""
    predicted = np.asarray(predicted, float)
    groups: dict[tuple, list[int]] = collections.defaultdict(list)
    for i, r in enumerate(records):
        if r["system"] == "mok":
            groups[workload_key(r) + (r.get("note", ""),)].append(i)
    regrets = []
    for ix in groups.values():
        if len(ix) < 2:
            continue
        meas = [records[i]["latency_ms"]["median"] for i in ix]
        pick = min(range(len(ix)), key=lambda j: pick_key(records[ix[j]], predicted[ix[j]]))
        regrets.append(meas[pick] / min(meas) - 1)
    return {"groups": len(regrets), "max": max(regrets) if regrets else None,
            "mean": float(np.mean(regrets)) if regrets else None}


def drift_report(records: list[dict], table_system: str | None = None) -> dict:
    """The CLI's figures (module docstring) for run records: the MoK runs' drift SD per band
    from their runs measured twice, and the drift ceiling of their workloads; with
    table_system, of the MoK runs calibration.report_space scores."""
    # imported here: rerun and report_space import registered, which imports this module
    from .rerun import repeated

    if table_system is not None:
        from .report_space import HARDWARE, usable
        records = usable(records, table_system)[0]
    mok = [r for r in records if r["system"] == "mok"]
    if not mok:
        raise MokInputError(
            "no MoK run records in the files (system 'mok'): the drift ceiling ranks a "
            "workload's MoK configurations" if table_system is None else
            f"no forward MoK records of {HARDWARE} that calibration.report_space scores "
            f"(--table-system {table_system}) in the files")
    pairs = repeated(mok)
    if not pairs:
        raise MokInputError("no MoK run was measured twice in the files (same workload, knobs "
                            "and tiles: calibration/rerun.py run_key): the drift SD needs "
                            "re-measured runs")
    sd = drift_sd(pairs)
    dc = drift_ceiling(mok, sd)
    return {"records": len(mok), "table_system": table_system, "pairs": len(pairs),
            "drift_sd": {k: {"sd": v, "pairs": n} for k, (v, n) in sd.items()},
            **{k: v for k, v in dc.items() if k != "workloads"},
            "regret_floor": drift_regret(mok, sd)}


def render(doc: dict) -> str:
    """The CLI's lines for drift_report's output."""
    which = ("" if doc.get("table_system") is None else
             f" (those calibration.report_space scores, --table-system {doc['table_system']})")
    out = [f"{doc['records']} MoK run records{which}, {doc['pairs']} runs measured twice"]
    out += [f"drift SD {label:>6s} tokens: {100 * v['sd']:.2f}% ({v['pairs']} pairs)"
            for label, v in doc["drift_sd"].items()]
    c = doc["ceiling"]
    out.append("drift ceiling (Spearman within workloads): "
               + ("n/a" if c is None else f"{c:.3f} over {doc['groups']} workloads"))
    out += [f"  tokens {label:>6s}: {v['ceiling']:.3f} ({v['groups']} workloads)"
            for label, v in doc["bands"].items()]
    if doc["no_sd"]:
        out.append(f"  left out: {doc['no_sd']} workloads of a band without a re-measured run")
    rf = doc["regret_floor"]
    if rf["workloads"]:
        over = ", ".join(f"> {100 * float(t):g}%: {100 * v:.1f}%" for t, v in rf["share_over"].items())
        out.append(f"drift regret floor (a perfect model's pick, workloads >= 4 configurations): "
                   f"mean {100 * rf['mean']:.2f}%, max {100 * rf['max']:.1f}% over "
                   f"{rf['workloads']} workloads; share of workloads {over}")
        out += [f"  tokens {label:>6s}: mean {100 * v['mean']:.2f}%, max {100 * v['max']:.1f}% "
                f"({v['workloads']} workloads)" for label, v in rf["bands"].items()]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    p = doc_parser("python -m calibration.noise", __doc__)
    p.add_argument("runs", nargs="*", help="run-record files")
    p.add_argument("--table-system", default=None,
                   help="score the MoK runs calibration.report_space scores with this "
                        "--table-system (gemm-only, mok-gemm); default: every MoK record")
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    return run_tool(p, _run, argv)


def _run(a: argparse.Namespace) -> int:
    if not a.runs:
        raise MokInputError("give run-record files (RUN_FILES...: one or more)")
    if a.table_system is not None:
        from .report_space import TABLE_SYSTEMS
        required_text(a.table_system, "--table-system", "system name")
        if a.table_system not in TABLE_SYSTEMS:
            raise MokInputError(f"--table-system {a.table_system!r}: choose from "
                                f"{', '.join(TABLE_SYSTEMS)} (the systems of GEMM-phase records)")
    doc = drift_report(read_records(a.runs), a.table_system)
    print(json.dumps(doc, indent=1) if a.json else render(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
