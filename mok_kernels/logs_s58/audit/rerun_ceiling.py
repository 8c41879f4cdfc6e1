"""Session 58 audit: report_space's "re-run ceiling" line alone (the same runs measured twice
among the inputs, the older measurement as a prediction of the newer), without its folds. It reads
records only (no parameters), with report_space's own code: usable(in_id_order(read_records(..)))
then rerun.ceiling(rerun.repeated(mok)).

    PYTHONPATH=. python mok_kernels/logs_s58/audit/rerun_ceiling.py FILES... [--table-system mok-gemm]
"""
import sys

from calibration.report_space import usable
from calibration.rerun import ceiling, repeated
from mok_model.records import in_id_order, read_records

args = sys.argv[1:]
system = "mok-gemm"
if "--table-system" in args:
    i = args.index("--table-system")
    system = args[i + 1]
    del args[i:i + 2]
records, _ = usable(in_id_order(read_records(args)), system)
mok = [r for r in records if r["system"] == "mok"]
c = ceiling(repeated(mok))
print(f"{len(mok)} MoK records; re-run ceiling: {c['n']} MoK runs measured twice, the older as a "
      f"prediction of the newer: MAPE {100 * c['mape']:.1f}%, max {100 * c['max_ape']:.1f}%, "
      f"Spearman {c['spearman']:.3f} ({c['spearman_groups']}), regret max / mean "
      f"{100 * c['regret_max']:.1f}% / {100 * c['regret_mean']:.1f}% ({c['regret_workloads']})")
