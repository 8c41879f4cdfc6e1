"""Session 73: the push/pull dispatch pairs (same workload, combine, minibatch, comm SMs) of the
held-out drawn seeds whose measured push/pull ratio the shipped parameters miss most, to choose
what a GPU trace of push against pull dispatch should look at (the 2-core CPU box).

    PYTHONPATH=.:mok_kernels/logs_s72 python mok_kernels/logs_s73/push_pairs.py   (push_pairs.txt)
"""
import collections

import numpy as np
from knob_bias import drawn_errors
from push_bias import SEEDS

from mok_model.records import record_scenario


def pairs(by_workload: dict) -> list[tuple]:
    """(log push/pull error in %, record of push, measured ratio, predicted ratio) per pair."""
    rows = []
    for runs in by_workload.values():
        by_knobs = collections.defaultdict(dict)
        for rec, err in runs:
            c = rec["config"]
            by_knobs[(c["combine"], c["minibatch"], c["comm_sms"])][c["dispatch"]] = (rec, err)
        for d in by_knobs.values():
            if "push" in d and "pull" in d:
                (push, e_push), (pull, e_pull) = d["push"], d["pull"]
                measured = push["latency_ms"]["median"] / pull["latency_ms"]["median"]
                rows.append((100 * (e_push - e_pull), push, measured, measured * np.exp(e_push - e_pull)))
    return sorted(rows, key=lambda r: r[0])


if __name__ == "__main__":
    for hw, patterns in SEEDS.items():
        rows = pairs(drawn_errors(hw, patterns)[1])
        errs = np.array([r[0] for r in rows])
        print(f"{hw}: {len(rows)} push/pull pairs; push/pull read {np.mean(errs):+.1f}% "
              f"(median {np.median(errs):+.1f}%) against measured; worst 12:")
        for err, rec, meas, pred in rows[:12]:
            m, c = record_scenario(rec).model, rec["config"]
            print(f"  {err:+6.1f}%  measured {meas:.3f} read {pred:.3f}  {m.name} EP {rec['ep']} "
                  f"{rec['tokens']} tok {rec['routing']['kind']}:{rec['routing'].get('arg')} "
                  f"seed {rec['routing']['seed']} combine {c['combine']} mb {c['minibatch']} "
                  f"sms {c['comm_sms']} {rec['latency_ms']['median']:.3f} ms")
