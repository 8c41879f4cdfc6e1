"""What the session-60 scripts read: the registered drawn-seed workloads of both cards (for each
registration file h{100,200}_drawnS_DATE.jsonl, not the GEMM-table or pass-fit variants, and its
runs: the analytic predictions met with their MoK records, grouped by workload), and a run file's
MoK records predicted after the fact by a parameters file."""
import collections
import glob
import re

import numpy as np

from calibration.registered import match, pick_regrets, read_predictions
from calibration.scoring import predict_records
from mok_model.records import (in_id_order, predictable, read_records, superseded_kernel,
                               workload_key)

PATTERN = "calibration/predictions/h*_drawn*_20*.jsonl"


def registered_workloads(pattern: str = PATTERN):
    """Yield (card, seed, [(prediction, record), ...] of one workload) for every workload with
    two or more measured settings."""
    for pred in sorted(glob.glob(pattern)):
        m = re.match(r".*/(h100|h200)_drawn(\d+)_2", pred)
        if not m or "gemm" in pred or "passfit" in pred:
            continue
        card, seed = m.groups()
        runs = glob.glob(f"calibration/runs/{'h100' if card == 'h100' else 'h200_drawn'}/"
                         f"drawn{seed}.jsonl")
        if not runs:
            continue
        per = collections.defaultdict(list)
        for p, r in match(read_predictions(pred), read_records(runs)):
            if p["engine"] == "analytic" and r["system"] == "mok":
                per[workload_key(r)].append((p, r))
        for pairs in per.values():
            if len(pairs) > 1:
                yield card, seed, pairs


def predicted_mok(params, path: str) -> tuple[list[dict], list[float]]:
    """(records, analytic predictions) of the measured MoK records of run file `path` on
    `params`' hardware that the model predicts, in record-id order (the filter of
    calibration.heldout_errors.signed_errors)."""
    recs = [r for r in in_id_order(read_records([path]))
            if r["system"] == "mok" and r["source"] == "measured"
            and r["hardware"]["preset"] == params.hardware and predictable(r)
            and not superseded_kernel(r)]
    return recs, list(predict_records(recs, params, "analytic")) if recs else []


def compare(named_params, files: list[str]) -> None:
    """Print, for each (name, parameters), per run file and pooled: analytic MAPE, max, signed
    median by dispatch and the regret of the pick among each workload's measured settings
    (the session-63 and -64 held-out comparisons)."""
    for name, params in named_params:
        every_e, every_reg, push_all = [], [], []
        for f in files:
            recs, pred = predicted_mok(params, f)
            e = np.array([p / r["latency_ms"]["median"] - 1 for p, r in zip(pred, recs)])
            reg = pick_regrets(recs, pred)
            push = np.array([r["config"]["dispatch"] == "push" for r in recs])
            every_e += list(e)
            every_reg += list(reg)
            push_all += list(push)
            print(f"{name} {f}: n {len(e)} MAPE {100 * np.abs(e).mean():.1f}% max "
                  f"{100 * np.abs(e).max():.1f}% signed median push {100 * np.median(e[push]):+.1f}% "
                  f"pull {100 * np.median(e[~push]):+.1f}%; regret mean {100 * np.mean(reg):.1f}% "
                  f"max {100 * max(reg):.1f}%")
        e, push = np.array(every_e), np.array(push_all)
        print(f"{name} all: n {len(e)} MAPE {100 * np.abs(e).mean():.2f}% (push "
              f"{100 * np.abs(e[push]).mean():.2f}%, pull {100 * np.abs(e[~push]).mean():.2f}%) max "
              f"{100 * np.abs(e).max():.1f}%; regret mean {100 * np.mean(every_reg):.2f}% max "
              f"{100 * max(every_reg):.1f}%; workloads over 3%: "
              f"{sum(r > 0.03 for r in every_reg)} of {len(every_reg)}")
