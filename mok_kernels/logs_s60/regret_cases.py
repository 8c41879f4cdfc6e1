"""Every registered drawn-seed workload whose registered pick was > 3 % off the best measured:
the pick's and the best's knobs, predicted and measured (session 60, the 2-core CPU box)."""
import collections
import glob
import re
import sys

from calibration.registered import match, read_predictions
from calibration.noise import pick_key
from mok_model.records import read_records, workload_key

rows = []


def k(c):
    return f"{c['dispatch']}/{c['combine']} mb{c['minibatch']} cs{c['comm_sms']}"


for pred in sorted(glob.glob(sys.argv[1] if len(sys.argv) > 1 else "calibration/predictions/h*_drawn*_20*.jsonl")):
    m = re.match(r".*/(h100|h200)_drawn(\d+)_2", pred)
    if not m or "gemm" in pred or "passfit" in pred:
        continue
    card, seed = m.groups()
    runs = glob.glob(f"calibration/runs/{'h100' if card == 'h100' else 'h200_drawn'}/drawn{seed}.jsonl")
    if not runs:
        continue
    recs = read_records(runs)
    for engine in ("analytic",):
        pairs = [(p, r) for p, r in match(read_predictions(pred), recs)
                 if p["engine"] == engine and r["system"] == "mok"]
        per = collections.defaultdict(list)
        for p, r in pairs:
            per[workload_key(r)].append((pick_key(r, p["predicted_ms"]), p["predicted_ms"],
                                         r["latency_ms"]["median"], r["config"], r))
        for items in per.values():
            if len(items) < 2:
                continue
            pick = min(items, key=lambda t: t[0])
            best = min(items, key=lambda t: t[2])
            reg = pick[2] / best[2] - 1
            if reg > 0.03:
                r = pick[4]
                name = r["model"]["name"] if isinstance(r["model"], dict) else r["model"]
                rows.append(f"{card} s{seed} {name} "
                            f"EP{r['ep']} x{r['tokens']} {r.get('routing', {}).get('kind')}: regret {100*reg:.1f}% "
                            f"pick {k(pick[3])} pred {pick[1]:.3f} meas {pick[2]:.3f} | best {k(best[3])} "
                            f"pred {best[1]:.3f} meas {best[2]:.3f} (pred gap {100*(best[1]/pick[1]-1):+.1f}%)")
print("\n".join(rows))
print(len(rows), "workloads with regret > 3 %")
