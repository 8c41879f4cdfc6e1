"""Session 70: the GEMM table's own workloads timed again with today's kernel, workload by
workload against the table's records of 2026-12-01 (and the shipped table's prediction of both).

    PYTHONPATH=. python mok_kernels/logs_s70/table_drift.py NEW_RECORDS [OLD_RECORDS]

OLD_RECORDS default: calibration/runs/h200_space/gemm_phases.jsonl.gz. Prints new / old - 1 by
the old measured duration, with each side's tiles.
"""

import sys

import numpy as np

from calibration.gemm_table import table_records
from mok_model.params import read_params
from mok_model.records import read_records, record_scenario


def key(r: dict) -> tuple:
    m = r["model"]["name"] if isinstance(r["model"], dict) else r["model"]
    return m, r["ep"], r["tokens"], str(sorted(r["routing"].items()))


def main() -> None:
    new = table_records(read_records([sys.argv[1]]), "h200-1", "mok-gemm")
    old_file = sys.argv[2] if len(sys.argv) > 2 else "calibration/runs/h200_space/gemm_phases.jsonl.gz"
    old = {key(r): r for r in table_records(read_records([old_file]), "h200-1", "mok-gemm")}
    table = read_params("mok_model/params/h200-1.json").gemm_table
    launch = table.lookup["launch_us"] * 1e-3
    rows = []
    for r in new:
        o = old.get(key(r))
        if o is None:
            continue
        mo, mn = o["latency_ms"]["median"], r["latency_ms"]["median"]
        pred = table.scenario_seconds(record_scenario(r)) * 1e3 + launch
        rows.append((mo, mn / mo - 1, pred / mn - 1, pred / mo - 1))
        t_new = {k: v for k, v in r["tiles"].items() if k in ("group_m", "dn_blocks", "split_dn")}
        print(
            f"{key(r)[0]:18s} EP {r['ep']:2d} x {r['tokens']:5d} {r['routing']['kind']:8s} old "
            f"{mo:7.3f} ms new {mn:7.3f} ms ({100 * (mn / mo - 1):+5.1f}%)  table vs new "
            f"{100 * (pred / mn - 1):+5.1f}%  new tiles {t_new}"
        )
    a = np.array(rows)
    print(f"\n{len(a)} workloads measured on both days")
    for lo, hi in ((0, 0.5), (0.5, 1), (1, 2), (2, 5), (5, 10), (10, 1e9)):
        s = (a[:, 0] >= lo) & (a[:, 0] < hi)
        if s.any():
            print(
                f"  old {lo:g}-{hi:g} ms: n {s.sum():3d}  new / old {100 * a[s, 1].mean():+5.1f}% "
                f"(median {100 * np.median(a[s, 1]):+5.1f}%)  table vs new {100 * a[s, 2].mean():+5.1f}%"
                f"  table vs old {100 * a[s, 3].mean():+5.1f}%"
            )


if __name__ == "__main__":
    main()
