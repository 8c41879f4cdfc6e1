"""Session 78: the predictions benchmarks/device/s78_chain_test.sh's settings are registered
with, before the run, by the code checked out (main, and branch s78-item-chain) and the
shipped parameters of HARDWARE: one line per setting, ms (the 2-core CPU box).

    PYTHONPATH=. python mok_kernels/logs_s78/chain_test_predict.py HARDWARE
"""
import itertools
import sys

from mok_model.predict import predict
from mok_model.records import workload_scenario
from mok_model.scenario import Config

D = "calibration/drawn_shapes"
GRIDS = [  # (shape, EP, tokens, routing, seed, capacity, minibatches, comm SMs, lags)
    (f"{D}/seed5/syn5-h5376-i384-e16-k1.toml", 4, 2304, "uniform", 0, 0.5, (512, 1024, 3072),
     (32, 64), (1, 2, 3, 4)),
    (f"{D}/seed28/syn28-h2560-i448-e16-k2.toml", 8, 4608, "zipf:1.2", 28, 1.0, (512, 1024, 4096),
     (8, 16, 32), (1,)),
]
hw = sys.argv[1]
for shape, ep, tokens, routing, seed, cap, mbs, ccs, lags in GRIDS:
    for mb, cc, lag in itertools.product(mbs, ccs, lags):
        scn = workload_scenario(hw, shape, ep, tokens, "fwd", "bf16", routing, seed, list_lag=lag)
        cfg = Config(dispatch="pull", combine="push", minibatch=mb, comm_sms=cc, macrobatch=131072,
                     capacity=cap)
        print(f"{shape.split('/')[-1][:-5]} ep{ep} {tokens} {routing} minibatch {mb} comm_sms {cc} "
              f"lag {lag}: {predict(scn, cfg).latency_ms:.4f} ms")
