"""Session 74: three readings of the held-out drawn seeds (H100 25-39, H200 28-36; shipped
parameters, analytic; knob_bias.drawn_errors) within workloads (log error minus the workload's
mean, what ranks its settings): (1) by dispatch and the number of minibatches M (tokens x top-k
/ minibatch): is push's bias a per-minibatch cost? (2) by the position a setting was timed in
its workload (the file's order): is there a warm-up or ordering effect? (3) how often push
dispatch is the measured best, and the best push over the best pull (the 2-core CPU box).

    PYTHONPATH=.:mok_kernels/logs_s72 python mok_kernels/logs_s74/within_workload.py   (within_workload.txt)
"""
import collections
import math

import numpy as np
from knob_bias import drawn_errors
from push_bias import SEEDS

from mok_model.records import record_scenario

M_BANDS = ((1, "1"), (2, "2"), (4, "3-4"), (8, "5-8"), (16, "9-16"), (math.inf, "17+"))


def m_band(rec: dict) -> str:
    m = math.ceil(rec["tokens"] * record_scenario(rec).model.top_k / rec["config"]["minibatch"])
    return next(label for top, label in M_BANDS if m <= top)


if __name__ == "__main__":
    for hw, patterns in SEEDS.items():
        _, by_workload = drawn_errors(hw, patterns)
        by_m, by_pos, best = collections.defaultdict(list), collections.defaultdict(list), collections.Counter()
        gaps = []
        for runs in by_workload.values():
            if len(runs) < 3:
                continue
            mean = np.mean([e for _, e in runs])
            for i, (rec, e) in enumerate(runs):
                by_m[(rec["config"]["dispatch"], m_band(rec))].append(100 * (e - mean))
                by_pos[i].append(100 * (e - mean))
            ms = {d: [r["latency_ms"]["median"] for r, _ in runs if r["config"]["dispatch"] == d]
                  for d in ("pull", "push")}
            best[min(runs, key=lambda r: r[0]["latency_ms"]["median"])[0]["config"]["dispatch"]] += 1
            if ms["push"] and ms["pull"]:
                gaps.append(min(ms["push"]) / min(ms["pull"]))
        print(f"{hw}: within-workload error (read minus the workload's mean) by dispatch and minibatches M")
        for d in ("pull", "push"):
            print("  " + d + ": " + ", ".join(f"M {label} {np.mean(by_m[(d, label)]):+.1f}% (n {len(by_m[(d, label)])})"
                                              for _, label in M_BANDS if by_m[(d, label)]))
        print("  by timing position: " + ", ".join(f"{i}: {np.mean(v):+.2f}% (n {len(v)})"
                                                  for i, v in sorted(by_pos.items())))
        g = np.array(gaps)
        print(f"  measured best: pull {best['pull']}, push {best['push']} workloads; best push / best pull "
              f"median {np.median(g):.3f} (p10 {np.percentile(g, 10):.3f}, p90 {np.percentile(g, 90):.3f}; "
              f"push faster in {100 * np.mean(g < 1):.0f}% of {len(g)})")
