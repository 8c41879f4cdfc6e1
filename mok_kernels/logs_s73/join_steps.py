"""Session 73: seed 39's worst miss (syn39-h6400-i5440-e8-k2, EP 4 x 128 tokens, hot:0.1) against
its comm SMs, pull / push, 4,096 rows: measured on one H100 (logs_s73/dev/s73p/steps.log,
`bash benchmarks/device/s73_probe.sh s73p`; the comm SMs joining the GEMMs after the dispatch,
and never joining) beside h100-1's readings with comm_join_share as shipped, at its design value 1
and at 0 (never joining) (the 2-core CPU box).

    PYTHONPATH=. python mok_kernels/logs_s73/join_steps.py [PARAMS]   (join_steps.txt)
"""
import re
import sys

from calibration.checks import shipped_params
from mok_model.analytic import mok_config_terms
from mok_model.params import read_params
from mok_model.records import read_records, record_scenario
from mok_model.scenario import Config

LOG = "mok_kernels/logs_s73/dev/s73p/steps.log"
p = read_params(sys.argv[1]) if len(sys.argv) > 1 else shipped_params("h100-1")
rec = next(r for r in read_records(["calibration/runs/h100/drawn39.jsonl"])
           if r["model"]["name"] == "syn39-h6400-i5440-e8-k2" and r["tokens"] == 128 and r["system"] == "mok")
scn = record_scenario(rec)
measured = {}
for line in open(LOG):
    m = re.match(r"\s+comm\s+(\d+) pull MoK(, comm SMs never join)?\s+([\d.]+) ms", line)
    if m:
        measured[(int(m.group(1)), bool(m.group(2)))] = float(m.group(3))


def read(cs: int, share: float) -> float:
    q = p.with_values(comm_join_share=share)
    cfg = Config(dispatch="pull", combine="push", minibatch=4096, comm_sms=cs, macrobatch=131072, capacity=1.0)
    return mok_config_terms(scn, q, cfg, False)["total"][0] * 1e3


print(f"comm SMs: measured joining / never (ms); read with comm_join_share {p['comm_join_share']:.3f} / 1 / 0")
for cs in sorted({c for c, _ in measured}):
    print(f"  {cs:3d}: {measured[(cs, False)]:.3f} / {measured[(cs, True)]:.3f}; "
          f"{read(cs, p['comm_join_share']):.3f} / {read(cs, 1.0):.3f} / {read(cs, 0.0):.3f}")
