"""The registered drawn-seed workloads of both cards, as the session-60 scripts read them: for
each registration file h{100,200}_drawnS_DATE.jsonl (not the GEMM-table or pass-fit variants)
and its runs, the analytic predictions met with their MoK records, grouped by workload."""
import collections
import glob
import re

from calibration.registered import match, read_predictions
from mok_model.records import read_records, workload_key

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
