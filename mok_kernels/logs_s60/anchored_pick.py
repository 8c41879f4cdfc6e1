"""Would a tuner that keeps the default knobs unless another setting is predicted at least m %
faster have picked better on the registered drawn seeds? Per card: regret mean / max / count
above 3 % of the registered analytic pick (m = 0) and of the anchored pick, over each workload's
measured settings (the drawn sweeps time the default pull / push / 4,096 / 32 in every workload).
Session 60, the 2-core CPU box; after the fact, from the registrations as they were made."""
import collections
import glob
import re

from calibration.noise import pick_key
from calibration.registered import match, read_predictions
from mok_model.records import read_records, workload_key

DEFAULT = ("pull", "push", 4096, 32)
MARGINS = (0.0, 0.01, 0.02, 0.03, 0.05, 0.08)


def knobs(c):
    return (c["dispatch"], c["combine"], c["minibatch"], c["comm_sms"])


per_card = collections.defaultdict(list)   # card -> [(rows of (pred, meas, is default, key))]
for pred in sorted(glob.glob("calibration/predictions/h*_drawn*_20*.jsonl")):
    m = re.match(r".*/(h100|h200)_drawn(\d+)_2", pred)
    if not m or "gemm" in pred or "passfit" in pred:
        continue
    card, seed = m.groups()
    runs = glob.glob(f"calibration/runs/{'h100' if card == 'h100' else 'h200_drawn'}/drawn{seed}.jsonl")
    if not runs:
        continue
    pairs = [(p, r) for p, r in match(read_predictions(pred), read_records(runs))
             if p["engine"] == "analytic" and r["system"] == "mok"]
    per = collections.defaultdict(list)
    for p, r in pairs:
        per[workload_key(r)].append((p["predicted_ms"], r["latency_ms"]["median"],
                                     knobs(r["config"]) == DEFAULT, pick_key(r, p["predicted_ms"])))
    per_card[card] += [rows for rows in per.values()
                       if len(rows) > 1 and any(d for _, _, d, _ in rows)]

for card, workloads in sorted(per_card.items()):
    for margin in MARGINS:
        regrets = []
        for rows in workloads:
            best = min(rows, key=lambda t: t[3])
            default = next(t for t in rows if t[2])
            pick = best if best[0] < default[0] * (1 - margin) else default
            regrets.append(pick[1] / min(t[1] for t in rows) - 1)
        over = sum(g > 0.03 for g in regrets)
        print(f"{card} margin {100 * margin:3.0f} %: {len(regrets)} workloads, regret mean "
              f"{100 * sum(regrets) / len(regrets):.2f} % max {100 * max(regrets):.1f} %, "
              f"{over} above 3 %")
    always = [next(t for t in rows if t[2])[1] / min(t[1] for t in rows) - 1 for rows in workloads]
    print(f"{card} the default always: regret mean {100 * sum(always) / len(always):.2f} % max "
          f"{100 * max(always):.1f} %, {sum(g > 0.03 for g in always)} above 3 %")
