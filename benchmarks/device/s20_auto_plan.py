"""The plan of s20_auto.sh (written in session 20, 2026-12-02, before the runs): per workload a
sweep of push combine x minibatch x comm SMs x work-list lag, and `mok bench --auto`'s pick
(the tuner's knobs and lag, as MoKLayer resolves them on one H200), so that the registered
predictions meet every record the script writes.

    python benchmarks/device/s20_auto_plan.py > calibration/predictions/h200_auto_lag_plan_2026-12-02.jsonl
"""

import itertools
import json

from mok_kernels.knobs import choose_knobs, shape_of
from mok_model.presets import load_model
from mok_model.records import record_model

D = "calibration/drawn_shapes"
WORKLOADS = [  # (model, EP, tokens): none of them in the lag sweep of session 19's registration
    (f"{D}/seed2/syn2-h7936-i256-e64-k6-s1.toml", 8, 1024),
    (f"{D}/seed5/syn5-h5888-i640-e32-k1-s1.toml", 4, 3072),
    (f"{D}/seed4/syn4-h2048-i320-e8-k2-s1.toml", 8, 2048),
    (f"{D}/seed3/syn3-h1792-i320-e64-k4-s1.toml", 16, 4096),
    ("qwen3-30b-a3b", 8, 4096),
    ("kimi-k2", 16, 1024),
]
MINIBATCH, COMM_SMS, LAGS = (512, 1024, 2048, 4096, 8192), (32, 64), (1, 2, 4)


def line(model, ep, tokens, config, lag):
    return {"config": config, "ep": ep, "model": record_model(model),
            "routing": {"kind": "uniform", "seed": 0}, "tokens": tokens,
            **({"tiles": {"list_lag": lag}} if lag != 1 else {})}


if __name__ == "__main__":
    for model, ep, tokens in WORKLOADS:
        for mb, cs, lag in itertools.product(MINIBATCH, COMM_SMS, LAGS):
            cfg = dict(dispatch="pull", combine="push", minibatch=mb, comm_sms=cs,
                       macrobatch=131072, capacity=1.0)
            print(json.dumps(line(model, ep, tokens, cfg, lag), sort_keys=True))
        auto = choose_knobs("h200-1", shape_of(load_model(model)), ep, tokens)
        print(json.dumps(line(model, ep, tokens, auto.knobs, auto.list_lag), sort_keys=True))
