"""Every registered drawn-seed workload whose registered pick was > 3 % off the best measured:
the pick's and the best's knobs, predicted and measured (session 60, the 2-core CPU box).

    PYTHONPATH=. python mok_kernels/logs_s60/regret_cases.py [PREDICTION_GLOB]
"""
import sys

from calibration.noise import pick_key
from registered_drawn import PATTERN, registered_workloads


def knobs(c):
    return f"{c['dispatch']}/{c['combine']} mb{c['minibatch']} cs{c['comm_sms']}"


rows = []
for card, seed, pairs in registered_workloads(sys.argv[1] if len(sys.argv) > 1 else PATTERN):
    pick_p, pick_r = min(pairs, key=lambda pr: pick_key(pr[1], pr[0]["predicted_ms"]))
    best_p, best_r = min(pairs, key=lambda pr: pr[1]["latency_ms"]["median"])
    meas, best = pick_r["latency_ms"]["median"], best_r["latency_ms"]["median"]
    if meas / best - 1 > 0.03:
        name = pick_r["model"]["name"] if isinstance(pick_r["model"], dict) else pick_r["model"]
        rows.append(f"{card} s{seed} {name} EP{pick_r['ep']} x{pick_r['tokens']} "
                    f"{pick_r.get('routing', {}).get('kind')}: regret {100 * (meas / best - 1):.1f}% "
                    f"pick {knobs(pick_r['config'])} pred {pick_p['predicted_ms']:.3f} meas {meas:.3f} | "
                    f"best {knobs(best_r['config'])} pred {best_p['predicted_ms']:.3f} meas {best:.3f} "
                    f"(pred gap {100 * (best_p['predicted_ms'] / pick_p['predicted_ms'] - 1):+.1f}%)")
print("\n".join(rows))
print(len(rows), "workloads with regret > 3 %")
