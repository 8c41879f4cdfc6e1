"""Session 59: the H100 GEMM table (shipped h100-1) against the kernel's GEMM phases alone of
seeds 25 and 26 (no fit reads them), per workload.

    PYTHONPATH=. python mok_kernels/logs_s59/gemm_phases_held.py
"""

from calibration.gemm_table import table_records
from mok_model.params import read_params
from mok_model.records import read_records, record_scenario

table = read_params("mok_model/params/h100-1.json").gemm_table
launch = table.lookup["launch_us"] * 1e-6
for s in (25, 26):
    rs = table_records(read_records([f"calibration/runs/h100/gemm_phases_drawn{s}.jsonl"]),
                       "h100-1", "mok-gemm")
    for r in sorted(rs, key=lambda r: (r["model"]["name"], r["tokens"])):
        pred = (table.scenario_seconds(record_scenario(r)) + launch) * 1e3
        m = r["latency_ms"]["median"]
        print(f"{s} {r['model']['name']:34s} ep{r['ep']:>3} n{r['tokens']:>5} {r['routing']['kind']:8s} "
              f"meas {m:.3f} pred {pred:.3f} err {100 * (pred / m - 1):+.1f}%")
