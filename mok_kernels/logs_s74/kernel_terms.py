"""Session 74: h200-1's analytic reading of the H200 drawn seeds no fit reads (34-41, today's
kernel) with the shipped parameters and with another parameters file: MAPE, max, mean
within-workload Spearman, argmin regret, and read / measured - 1 by the pass's measured time
(the 2-core CPU box).

    PYTHONPATH=.:mok_kernels/logs_s72:mok_kernels/logs_s73:mok_kernels/logs_s74 \
        python mok_kernels/logs_s74/kernel_terms.py FILE.json
"""
import sys

import numpy as np
from error_by_duration import by_time
from knob_bias import drawn_errors
from variant_eval import summary

from calibration.checks import shipped_params
from mok_model.params import read_params

HELD_OUT = ["calibration/runs/h200_drawn/drawn3[4-9].jsonl*", "calibration/runs/h200_drawn/drawn4[0-9].jsonl*"]
BANDS = ((0, .25), (.25, 1), (1, 5), (5, np.inf))

if __name__ == "__main__":
    for name, params in (("shipped", shipped_params("h200-1")), (sys.argv[1], read_params(sys.argv[1]))):
        _, by_workload = drawn_errors("h200-1", HELD_OUT, params)
        bands = ", ".join(f"{lo:g}-{hi:g} ms {100 * mean:+.1f}%"
                          for lo, hi, _, mean, _ in by_time(by_workload, BANDS))
        print(f"{name}: {summary(by_workload)}; by time: {bands}", flush=True)
