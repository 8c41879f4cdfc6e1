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
seeds = [21,22,23,24,25,26,27,28,29]
files = {s: f"calibration/runs/h100/gemm_phases_drawn{s}.jsonl" for s in seeds}
recs = {s: table_records(read_records([files[s]]), "h100-1", "mok-gemm") for s in seeds}
ship = read_params("mok_model/params/h100-1.json").gemm_table
def err(t, rs):
    launch = t.lookup["launch_us"]*1e-6
    return np.array([(t.scenario_seconds(record_scenario(r))+launch)*1e3/r["latency_ms"]["median"]-1 for r in rs])
allt=[];alln=[]
for s in seeds:
    train = [r for q in seeds if q != s for r in recs[q]]
    nat = build_table(train, "h100-1", [files[q] for q in seeds if q != s], "mok-gemm", "/tmp/x.json")
    a, b = err(ship, recs[s]), err(nat, recs[s])
    allt += list(a); alln += list(b)
    print(f"seed {s}: n {len(a)}  transferred MAPE {100*np.abs(a).mean():5.1f} max {100*np.abs(a).max():5.1f} | native-LOSO MAPE {100*np.abs(b).mean():5.1f} max {100*np.abs(b).max():5.1f}")
allt=np.abs(allt); alln=np.abs(alln)
print(f"all: transferred {100*allt.mean():.1f} / max {100*allt.max():.1f}; native LOSO {100*alln.mean():.1f} / max {100*alln.max():.1f}")
