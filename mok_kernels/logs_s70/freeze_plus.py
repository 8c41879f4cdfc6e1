"""Session 70: freeze the candidate refit made in a worktree (/tmp/w70) under
calibration/predictions/params/*_plus2127_2026-12-07.json, tables and fit records beside them."""

import json
import shutil
import sys

sys.path.insert(0, "/work/main")
C = "/tmp/w70/mok_model/params"
P = "/work/main/calibration/predictions/params"
D = "2026-12-07"
N = "plus2127"
NOTE = (
    "Session 70's candidate, not shipped (held-out passes of 10 ms and more read 3-4.5 % slow; "
    'docs/calibration.md "Session 70"): `python -m calibration.defaults` with the drawn seeds '
    "21-27's GEMM phases (today's kernel) added to the h200-1 table (built with --sustain). "
)
par = json.load(open(f"{C}/h200-1.json"))
tab = json.load(open(f"{C}/gemm/h200-1.json"))
shutil.copy(f"{C}/gemm/points/h200-1.json", f"{P}/points/gemm_h200-1_{N}_{D}.json")
tab["points_file"] = f"points/gemm_h200-1_{N}_{D}.json"
json.dump(tab, open(f"{P}/gemm_h200-1_{N}_{D}.json", "w"), indent=1)
shutil.copy(f"{C}/fit/h200-1.json", f"{P}/fit/h200-1_{N}_{D}.json")
par["gemm_table"] = f"gemm_h200-1_{N}_{D}.json"
par["fit_record"] = f"fit/h200-1_{N}_{D}.json"
par["notes"] = NOTE + par["notes"]
json.dump(par, open(f"{P}/h200-1_{N}_{D}.json", "w"), indent=1)
par = json.load(open(f"{C}/h100-1.json"))
tab = json.load(open(f"{C}/gemm/h100-1.json"))
tab["transferred_from"] = f"gemm_h200-1_{N}_{D}.json"
json.dump(tab, open(f"{P}/gemm_h100-1_{N}_{D}.json", "w"), indent=1)
par["gemm_table"] = f"gemm_h100-1_{N}_{D}.json"
shutil.copy(f"{C}/fit/h100-1.json", f"{P}/fit/h100-1_{N}_{D}.json")
par["fit_record"] = f"fit/h100-1_{N}_{D}.json"
par["notes"] = NOTE + par["notes"]
json.dump(par, open(f"{P}/h100-1_{N}_{D}.json", "w"), indent=1)
from mok_model.params import read_params  # noqa: E402 (after the path is set)

for h in ("h200-1", "h100-1"):
    p = read_params(f"{P}/{h}_{N}_{D}.json")
    print(h, "reads", p.gemm_table is not None, p["pipe_copy_scale"])
