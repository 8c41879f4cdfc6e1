"""Seed 21 on an H100 under session 53's group_m rule (calibration/runs/h100/drawn21g.jsonl)
against the same settings ungrouped (session 53's drawn21.jsonl): new / old medians by shape and
system, by shape and tokens (MoK), then the two newly grouped shapes setting by setting.

    PYTHONPATH=. python mok_kernels/logs_s54/drawn21_group_rule_ab.py
"""

import collections
import json
import statistics

GROUPED = ("syn21-h6912-i3712-e64-k10-s1", "syn21-h7424-i3456-e16-k1-s1")


def load(path: str) -> dict:
    out = collections.defaultdict(list)
    for line in open(path):
        r = json.loads(line)
        c = r.get("config") or {}
        name = r["model"] if isinstance(r["model"], str) else r["model"]["name"]
        key = (name, r["ep"], r["tokens"], json.dumps(r["routing"], sort_keys=True), r["system"],
               c.get("dispatch"), c.get("combine"), c.get("minibatch"), c.get("comm_sms"))
        out[key].append(r["latency_ms"]["median"])
    return out


def main() -> None:
    old, new = load("calibration/runs/h100/drawn21.jsonl"), load("calibration/runs/h100/drawn21g.jsonl")
    both = sorted(old.keys() & new.keys())
    ratio = {k: statistics.median(new[k]) / statistics.median(old[k]) for k in both}
    for title, group in (("shape, system", lambda k: (k[0], k[4])),
                         ("shape, tokens (MoK)", lambda k: (k[0], k[2]) if k[4] == "mok" else None)):
        print(f"new / old by {title}:")
        by = collections.defaultdict(list)
        for k in both:
            if group(k) is not None:
                by[group(k)].append(ratio[k])
        for g in sorted(by):
            v = sorted(by[g])
            print(" ", g, len(v), f"median {statistics.median(v):.3f}", " ".join(f"{x:.3f}" for x in v))
    print("the grouped shapes, MoK, setting by setting (old ms -> new ms, new / old):")
    for k in both:
        if k[0] in GROUPED and k[4] == "mok":
            print(" ", k[0][:12], k[1:4], k[5:], f"{statistics.median(old[k]):.3f} -> "
                  f"{statistics.median(new[k]):.3f}  {ratio[k]:.3f}")


if __name__ == "__main__":
    main()
