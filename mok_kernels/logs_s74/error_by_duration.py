"""Session 74: the shipped parameters' analytic read / measured on the held-out drawn passes
(H200 seeds 28-41, H100 seeds 25-40), by the pass's measured time: where the GEMM table's drift
(logs_s74/table_drift.txt: short phases faster today, long ones slower) would show (the 2-core
CPU box).

    PYTHONPATH=.:mok_kernels/logs_s72 python mok_kernels/logs_s74/error_by_duration.py   (error_by_duration.txt)
"""
import numpy as np
from knob_bias import drawn_errors

SEEDS = {"h200-1": ["calibration/runs/h200_drawn/drawn2[89].jsonl*", "calibration/runs/h200_drawn/drawn3[0-9].jsonl*",
                    "calibration/runs/h200_drawn/drawn4[01].jsonl*"],
         "h100-1": ["calibration/runs/h100/drawn2[5-9].jsonl*", "calibration/runs/h100/drawn3[0-9].jsonl*",
                    "calibration/runs/h100/drawn40.jsonl*"]}
BANDS = ((0, .25), (.25, .5), (.5, 1), (1, 2), (2, 5), (5, 10), (10, np.inf))


def by_time(by_workload: dict, bands=BANDS) -> list[tuple]:
    """(lo, hi, runs, mean and median read / measured - 1) of drawn_errors' runs by measured ms."""
    a = np.array([(r["latency_ms"]["median"], e) for runs in by_workload.values() for r, e in runs])
    rows = []
    for lo, hi in bands:
        e = a[(a[:, 0] >= lo) & (a[:, 0] < hi), 1]
        rows.append((lo, hi, e.size, np.exp(e).mean() - 1, np.exp(np.median(e)) - 1))
    return rows


if __name__ == "__main__":
    for hw, patterns in SEEDS.items():
        _, by_workload = drawn_errors(hw, patterns)
        rows = by_time(by_workload)
        print(f"{hw}: {sum(r[2] for r in rows)} passes, read / measured - 1 by measured time")
        for lo, hi, n, mean, median in rows:
            print(f"  {lo:>5}-{hi:<5} ms n {n:4d}: mean {100 * mean:+5.1f}%, median {100 * median:+5.1f}%")
