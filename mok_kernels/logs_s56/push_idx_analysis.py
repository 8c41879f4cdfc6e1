"""Session 56: the push lanes' cost beside pull's, measured with the copies alone (one H100,
benchmarks/device/s56_push_idx.sh, logs_s56/dev/push_idx_h100.jsonl) against the model's terms
(h100-1: push_scan visits and copy_load's 1/serial_copy_scale against pull's 1/pipe_copy_scale).

    PYTHONPATH=. python mok_kernels/logs_s56/push_idx_analysis.py"""
import json

import numpy as np

from mok_model import analytic as A
from mok_model.params import load_params
from mok_model.presets import load_hardware, load_model
from mok_model.scenario import Config, Scenario
from mok_model.workload import traffic

p = load_params(None, "h100-1")
runs = [json.loads(line) for line in open("mok_kernels/logs_s56/dev/push_idx_h100.jsonl")]
copies = {(r["workload"]["model"], r["knobs"]["dispatch"]): r for r in runs if r["form"] == "copies"}
print("| H | copies push ms | pull ms | gap ms | rows | minibatches | model visits / program | "
      "model visit ms | gap / visit (us) | model copy-rate gap ms | model gap ms |")
print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for h in (2048, 4096, 7936):
    f = f"benchmarks/device/shapes_s56/push-idx-h{h}.toml"
    push, pull = copies[(f, "push")], copies[(f, "pull")]
    gap = push["launch_ms"]["median"] - pull["launch_ms"]["median"]
    rows, M = push["ran"]["routed_rows"], push["ran"]["minibatches"]
    scn = Scenario(model=load_model(f), hardware=load_hardware("h100-1"), ep=32, tokens=4096,
                   routing="hot:0.1")
    cfg = Config(dispatch="push", combine="push", minibatch=4096, comm_sms=8, macrobatch=131072,
                 capacity=1.0)
    scn_push = scn.with_(copy_loop="runs")
    tiles = float(np.ceil(rows / 128))
    visits = float(A.push_visits(scn_push, 32, 8, rows / M, np.ceil(tiles / M))) * M
    visit_ms = visits * A.push_visit_s(scn_push, p) * 1e3
    base_ms = rows * 2 * h / (8 * p["copy_gbps_per_sm"] * 1e9) * 1e3
    rate_gap = base_ms * (1 / p["serial_copy_scale"] - 1 / p["pipe_copy_scale"])
    print(f"| {h} | {push['launch_ms']['median']:.3f} | {pull['launch_ms']['median']:.3f} | "
          f"{gap:.3f} | {rows} | {M} | {visits:.0f} | {visit_ms:.3f} | {gap / visits * 1e3:.3f} | "
          f"{rate_gap:.3f} | {visit_ms + rate_gap:.3f} |")
_ = traffic, cfg
