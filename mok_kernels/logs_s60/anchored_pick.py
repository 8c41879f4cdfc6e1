"""Would a tuner that keeps the default knobs unless another setting is predicted at least m %
faster have picked better on the registered drawn seeds? Per card: regret mean / max / count
above 3 % of the registered analytic pick (m = 0) and of the anchored pick, over each workload's
measured settings (the drawn sweeps time the default pull / push / 4,096 / 32 in every workload).
Session 60, the 2-core CPU box; after the fact, from the registrations as they were made."""
import collections

from calibration.noise import pick_key
from registered_drawn import registered_workloads

DEFAULT = ("pull", "push", 4096, 32)
MARGINS = (0.0, 0.01, 0.02, 0.03, 0.05, 0.08)


def knobs(c):
    return (c["dispatch"], c["combine"], c["minibatch"], c["comm_sms"])


per_card = collections.defaultdict(list)   # card -> workloads of (pred, meas, is default, key)
for card, _, pairs in registered_workloads():
    rows = [(p["predicted_ms"], r["latency_ms"]["median"], knobs(r["config"]) == DEFAULT,
             pick_key(r, p["predicted_ms"])) for p, r in pairs]
    if any(d for _, _, d, _ in rows):
        per_card[card].append(rows)

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
