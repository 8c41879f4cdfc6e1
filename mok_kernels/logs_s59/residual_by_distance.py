"""Session 59: does the GEMM table's interpolated residual help far from measured shapes? Held-out
GEMM phases (H100 seeds 22-26; H200 drawn 2-4 and unseen), MAPE with the residual and with the
mechanism alone, by the distance to the nearest measured shape (log2 I, H, local experts).

    PYTHONPATH=. python mok_kernels/logs_s59/residual_by_distance.py
"""

import numpy as np

from calibration.gemm_table import table_records
from mok_model.gemm_table import _mechanism_inputs, mechanism_seconds, shape_of
from mok_model.params import read_params
from mok_model.records import read_records, record_scenario

D = "calibration/runs/h200_drawn/"
SETS = {"h100-1": [f"calibration/runs/h100/gemm_phases_drawn{s}.jsonl" for s in (22, 23, 24, 25, 26)],
        "h200-1": [D + "drawn2_gemm.jsonl", D + "drawn3_gemm.jsonl", D + "drawn4_gemm.jsonl",
                   "calibration/runs/h200_unseen/unseen_gemm.jsonl"]}


def mape(x):
    return f"{100 * np.mean(np.abs(x)):.1f}%" if len(x) else "-"


for hw, files in SETS.items():
    t = read_params(f"mok_model/params/{hw}.json").gemm_table
    launch = t.lookup["launch_us"] * 1e-6
    rows = []
    for r in table_records(read_records(files), hw, "mok-gemm"):
        scn = record_scenario(r)
        f, res = _mechanism_inputs(t, scn)
        _, w, h, local = shape_of(scn)
        d = float(np.sqrt(t._distances(w, h, local).min()))
        alone, m = mechanism_seconds(f, t.lookup), r["latency_ms"]["median"] * 1e-3
        rows.append((d, ((alone - launch) * res + launch) / m - 1, alone / m - 1, r["tokens"]))
    a = np.array(rows)
    print(f"{hw}: {len(a)} held-out GEMM-phase records")
    for lo, hi in ((0, 0.01), (0.01, 0.5), (0.5, 0.8), (0.8, 1.2), (1.2, 9)):
        m = (a[:, 0] >= lo) & (a[:, 0] < hi)
        few = m & (a[:, 3] <= 640)
        if m.sum():
            print(f"  distance [{lo}, {hi}): n {m.sum():3d}  with residual {mape(a[m, 1])}  mechanism "
                  f"alone {mape(a[m, 2])}  (<= 640 tokens, n {few.sum()}: {mape(a[few, 1])} / {mape(a[few, 2])})")
