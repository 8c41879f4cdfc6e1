"""Leave one seed out, session 62: each drawn seed's H100 GEMM phases alone (mok-gemm records,
calibration/runs/h100/gemm_phases_drawn21..29.jsonl) predicted by (a) the shipped h100-1 table
(h200-1's points looked up on a mechanism fitted to seed 21's H100 phases) and (b) a table built
(calibration.gemm_table.build_table) from the other eight seeds' H100 phases alone.

    PYTHONPATH=. python mok_kernels/logs_s62/gemm_table_loso.py   # the 2-core box, ~1 min
"""
import numpy as np

from calibration.gemm_table import build_table, table_records
from mok_model.params import read_params
from mok_model.records import read_records, record_scenario

SEEDS = range(21, 30)
FILES = {s: f"calibration/runs/h100/gemm_phases_drawn{s}.jsonl" for s in SEEDS}


def errors(table, records) -> np.ndarray:
    """Signed relative error of the table's lookup (plus its launch) on each record."""
    launch = table.lookup["launch_us"] * 1e-6
    return np.array([(table.scenario_seconds(record_scenario(r)) + launch) * 1e3
                     / r["latency_ms"]["median"] - 1 for r in records])


def line(name: str, e: np.ndarray) -> str:
    return f"{name} MAPE {100 * np.abs(e).mean():5.1f} max {100 * np.abs(e).max():5.1f}"


recs = {s: table_records(read_records([FILES[s]]), "h100-1", "mok-gemm") for s in SEEDS}
shipped = read_params("mok_model/params/h100-1.json").gemm_table
every_t, every_n = [], []
for s in SEEDS:
    others = [q for q in SEEDS if q != s]
    native = build_table([r for q in others for r in recs[q]], "h100-1", [FILES[q] for q in others],
                         "mok-gemm", "/tmp/x.json")
    t, n = errors(shipped, recs[s]), errors(native, recs[s])
    every_t += list(t)
    every_n += list(n)
    print(f"seed {s}: n {len(t)}  {line('transferred', t)} | {line('native-LOSO', n)}")
print(f"all: {line('transferred', np.array(every_t))}; {line('native LOSO', np.array(every_n))}")
