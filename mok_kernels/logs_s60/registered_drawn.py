"""What the session-60 scripts read: the registered drawn-seed workloads of both cards (for each
registration file h{100,200}_drawnS_DATE.jsonl, not the GEMM-table or pass-fit variants, and its
runs: the analytic predictions met with their MoK records, grouped by workload), and a run file's
MoK records predicted after the fact by a parameters file."""
import collections
import glob
import re

from calibration.registered import match, read_predictions
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
