"""The shipped GEMM table's error on measured GEMM phases alone (system mok-gemm), per record:
the table's lookup (scenario_seconds + its launch time) against the median, as
calibration.gemm_table.fit_lookup reads them; a diagnostic, no fit.

    PYTHONPATH=. python mok_kernels/logs_s62/gemm_phase_errors.py PARAMS RUN_FILES...
"""
from __future__ import annotations

import sys

import numpy as np

from calibration.gemm_table import table_records
from mok_model.params import read_params
from mok_model.records import read_records, record_scenario


def main(params: str, files: list[str]) -> None:
    p = read_params(params)
    t = p.gemm_table
    launch = t.lookup["launch_us"] * 1e-6
    recs = table_records(read_records(files), p.hardware, "mok-gemm")
    errs = []
    for r in sorted(recs, key=lambda r: r["id"]):
        pred = (t.scenario_seconds(record_scenario(r)) + launch) * 1e3
        meas = r["latency_ms"]["median"]
        errs.append(pred / meas - 1)
        rt = r["routing"] if isinstance(r["routing"], str) else r["routing"].get("kind")
        print(f"{r['model']['name']:34s} ep {r['ep']:2d} n {r['tokens']:5d} {rt!s:8s} "
              f"measured {meas:7.3f} ms  table {pred:7.3f}  {100 * errs[-1]:+6.1f} %")
    e = np.abs(errs)
    print(f"{len(errs)} phases: MAPE {100 * e.mean():.1f} %, max {100 * e.max():.1f} %, "
          f"signed mean {100 * np.mean(errs):+.1f} %")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
