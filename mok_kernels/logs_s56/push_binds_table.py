"""Session 56: push / pull dispatch ratios of the registered push-binds grid, measured (H100) against
the registration's analytic prediction, for the rule written in benchmarks/device/s56_push_binds.sh.

    PYTHONPATH=. python mok_kernels/logs_s56/push_binds_table.py"""
import collections

from calibration.registered import match, read_predictions
from mok_model.records import read_records

PRED = "calibration/predictions/h100_push_binds_2026-12-05.jsonl"
RUNS = "calibration/runs/h100/push_binds.jsonl"
pairs = [(p, r) for p, r in match(read_predictions(PRED), read_records([RUNS]))
         if r["system"] == "mok" and p["engine"] == "analytic"]
t = collections.defaultdict(dict)
for p, r in pairs:
    k = (r["model"] if isinstance(r["model"], str) else r["model"]["name"], r["routing"]["kind"],
         r["config"]["comm_sms"])
    t[k][r["config"]["dispatch"]] = (p["predicted_ms"], r["latency_ms"]["median"])
print("| preset | routing | comm SMs | push / pull predicted | measured | measured - predicted |")
print("|---|---|---:|---:|---:|---:|")
for k in sorted(t):
    if {"push", "pull"} <= set(t[k]):
        (pp, mp), (pl, ml) = t[k]["push"], t[k]["pull"]
        print(f"| {k[0]} | {k[1]} | {k[2]} | {pp / pl:.3f} | {mp / ml:.3f} | {mp / ml - pp / pl:+.3f} |")
