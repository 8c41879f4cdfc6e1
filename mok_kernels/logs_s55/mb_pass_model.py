"""The shipped h200-1 model (analytic) against session 55's pass timings of s54_mb_gemm.py (one
H200, EP 8 x 4,096, uniform, pull / push, 32 comm SMs, capacity 1.0, group_m of the shape),
by minibatch and work-list lag. The model saw none of these runs; it was not registered first.

    PYTHONPATH=. python mok_kernels/logs_s55/mb_pass_model.py mok_kernels/logs_s55/mb_gemm_h200.txt
"""
import sys

from mok_model.params import load_params
from mok_model.predict import predict
from mok_model.records import record_config, record_model, record_scenario

PARAMS = load_params(None, "h200-1")


def predicted(model, mb, lag):
    """The analytic latency (ms) of the run the table row timed, read as a run record."""
    rec = {"system": "mok", "model": record_model(model), "ep": 8, "tokens": 4096, "pass": "fwd",
           "precision": "bf16", "hardware": {"preset": "h200-1"}, "emulated_peers": True,
           "routing": {"kind": "uniform", "seed": 0},
           "config": {"dispatch": "pull", "combine": "push", "minibatch": mb, "comm_sms": 32,
                      "macrobatch": 131072, "capacity": 1.0},
           "tiles": {"list_lag": lag} if lag != 1 else {}}
    return predict(record_scenario(rec), record_config(rec), "mok", PARAMS,
                   refuse_overflow=False).latency_ms


def main(path):
    print("| workload | lag | minibatch | measured ms | predicted ms | error |")
    print("|---|---:|---:|---:|---:|---:|")
    for line in open(path):
        f = [x.strip() for x in line.split("|")[1:-1]]
        if len(f) != 8 or not f[2].isdigit():
            continue
        model, lag, mb, meas = f[0], int(f[2]), int(f[3]), float(f[6])
        p = predicted(model, mb, lag)
        print(f"| {model.split('/')[-1]} | {lag} | {mb} | {meas:.3f} | {p:.3f} | {p / meas - 1:+.1%} |")


if __name__ == "__main__":
    main(sys.argv[1])
