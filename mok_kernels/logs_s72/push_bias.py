"""Session 72: knob_bias.py's within-workload error of the push-dispatch runs alone, by tokens per
GPU (<= 640, above), EP and hidden size (<= 3,072, above), on the held-out drawn seeds (H100
25-38, H200 28-36), shipped parameters (the 2-core CPU box).

    PYTHONPATH=. python mok_kernels/logs_s72/push_bias.py   (output: push_bias.txt)
"""
import collections
import glob
import sys

import numpy as np

from calibration.checks import shipped_params
from mok_model.records import record_scenario, workload_key

sys.path.insert(0, "mok_kernels/logs_s60")
from registered_drawn import predicted_mok  # noqa: E402

SEEDS = {"h100-1": ["calibration/runs/h100/drawn2[5-9].jsonl*", "calibration/runs/h100/drawn3[0-9].jsonl*"],
         "h200-1": ["calibration/runs/h200_drawn/drawn2[89].jsonl*",
                    "calibration/runs/h200_drawn/drawn3[0-9].jsonl*"]}
for hw, patterns in SEEDS.items():
    files = [f for p in patterns for f in sorted(glob.glob(p))
             if "gemm" not in f and "rerun" not in f and "native" not in f]
    params = shipped_params(hw)
    by_workload = collections.defaultdict(list)
    for f in files:
        for rec, pred in zip(*predicted_mok(params, f)):
            if rec["pass"] == "fwd" and rec["precision"] == "bf16":
                by_workload[workload_key(rec)].append((rec, np.log(pred / rec["latency_ms"]["median"])))
    groups = collections.defaultdict(list)
    for runs in by_workload.values():
        if len(runs) < 3:
            continue
        mean = np.mean([e for _, e in runs])
        for rec, e in runs:
            if rec["config"]["dispatch"] == "push":
                hidden = record_scenario(rec).model.hidden
                groups[("<=640" if rec["tokens"] <= 640 else ">640", rec["ep"],
                        "H<=3072" if hidden <= 3072 else "H>3072")].append(100 * (e - mean))
    print(f"{hw}: push dispatch, within-workload error by tokens, EP, hidden")
    for (tokens, ep, h), devs in sorted(groups.items()):
        print(f"  {tokens:>5} EP {ep:>2} {h:>7}: {np.mean(devs):+5.1f}% (n {len(devs)})")
