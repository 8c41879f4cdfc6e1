"""Session 71: held-out GEMM phases (drawn seeds 28 on; calibration/runs/*/gemm_phases_drawn*)
read by the shipped tables and by a candidate checkout's (session 70's plus_phases.py, any
checkout).

    PYTHONPATH=. python mok_kernels/logs_s71/phases_test.py CANDIDATE_CHECKOUT
"""

import glob
import re
import sys

import numpy as np

from calibration.gemm_table import table_records
from mok_model.gemm_table import read_table
from mok_model.records import read_records, record_scenario

PHASES = {"h200-1": "calibration/runs/h200_drawn/gemm_phases_drawn*.jsonl",
          "h100-1": "calibration/runs/h100/gemm_phases_drawn*.jsonl"}
BINS = ((0, 0.5), (0.5, 2), (2, 5), (5, 10), (10, 1e9))


def main(candidate: str) -> None:
    for hw, pattern in PHASES.items():
        data = [(record_scenario(r), r["latency_ms"]["median"] * 1e-3)
                for f in sorted(glob.glob(pattern)) if int(re.search(r"drawn(\d+)", f)[1]) >= 28
                for r in table_records(read_records([f]), hw, "mok-gemm")]
        ms = np.array([m for _, m in data]) * 1e3
        for name, root in (("shipped", "."), ("candidate", candidate)):
            t = read_table(f"{root}/mok_model/params/gemm/{hw}.json")
            launch = t.lookup["launch_us"] * 1e-6
            e = np.array([(t.scenario_seconds(s) + launch) / m - 1 for s, m in data])
            bins = [f"{lo:g}-{hi:g} ms {100 * e[s].mean():+4.1f}% (n {s.sum()})"
                    for lo, hi in BINS if (s := (ms >= lo) & (ms < hi)).any()]
            print(f"{hw} {name:9s} n {len(e)} MAPE {100 * abs(e).mean():.2f}% max {100 * abs(e).max():.1f}%  "
                  + "; ".join(bins))


if __name__ == "__main__":
    main(sys.argv[1])
