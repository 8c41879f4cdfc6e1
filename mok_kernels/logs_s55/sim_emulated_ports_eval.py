"""The simulator's MAPE on the six held-out drawn files and on every 10th training record,
shipped, or with mok_kernels/logs_s55/sim_emulated_ports.patch applied (session 55; not shipped).

    PYTHONPATH=. python mok_kernels/logs_s55/sim_emulated_ports_eval.py
"""
import sys
import time

import numpy as np

sys.path.insert(0, "mok_kernels/logs_s55")
from overhead_overlap_trial import HELD_OUT, errors, forward_records, training_files  # noqa: E402


def report(name, recs, hardware, t0):
    e = errors(recs, hardware, engine="sim")
    ok = np.isfinite(e)
    print(f"{name:18s} sim n {ok.sum():4d} MAPE {100 * np.mean(abs(e[ok])):.2f}% max "
          f"{100 * np.max(abs(e[ok])):.1f}%  ({time.time() - t0:.0f} s)", flush=True)


if __name__ == "__main__":
    t0 = time.time()
    for name, (files, hardware) in HELD_OUT.items():
        report(name, forward_records(files), hardware, t0)
    report("train every 10th", forward_records(training_files())[::10], "h200-1", t0)
