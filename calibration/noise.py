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
- `resolved_pairs`: of the pairs of configurations inside a workload whose p10-p90 intervals do not
  overlap (the records tell them apart), the share the model orders as measured.
"""

from __future__ import annotations

import collections
import math

import numpy as np

from mok_model.records import workload_key

from .validate import spearman


def iteration_times(rec: dict) -> np.ndarray:
    """Per-iteration latency (ms) of a record: the slowest rank of each iteration (`rank_ms`), or
    `latency_ms.samples`; empty when the record holds neither."""
    if rec.get("rank_ms"):
        return np.max(np.asarray(rec["rank_ms"], float), axis=0)
    return np.asarray(rec["latency_ms"].get("samples") or [], float)


def _groups(records: list[dict]) -> dict[tuple, list[int]]:
    out: dict[tuple, list[int]] = collections.defaultdict(list)
    for i, r in enumerate(records):
        out[workload_key(r) + (r["system"],)].append(i)
    return {k: v for k, v in out.items() if len(v) >= 3}


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
    on an exact tie the tuner's own preference (mok_model/tuner.py: the published pull dispatch,
    then push combine), never the measurement."""
    c = rec["config"]
    return (predicted, c.get("dispatch") != "pull", c.get("combine") != "push")


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
