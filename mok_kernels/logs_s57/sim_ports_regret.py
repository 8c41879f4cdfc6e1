"""Session 57: session 55's simulator change on emulated hardware (a copy loads only the port of
the GPU whose comm SMs or epilogue drive it; mok_kernels/logs_s55/sim_emulated_ports.patch),
judged on MAPE and tuner regret over the registered run files no fit read, shipped against
patched (toggled in process). Regret: per workload, the measured time of the setting the engine
ranks first over the best measured, minus 1.

    PYTHONPATH=. python mok_kernels/logs_s57/sim_ports_regret.py
"""
import sys
import time
from collections import defaultdict

import numpy as np

sys.path.insert(0, "mok_kernels/logs_s55")
from overhead_overlap_trial import HELD_OUT, forward_records  # noqa: E402

from calibration.scoring import predict_records  # noqa: E402
from mok_model.params import load_params  # noqa: E402
from mok_model.records import workload_key  # noqa: E402
from mok_model.sim import mok as S  # noqa: E402

HELD = {**HELD_OUT, "h100 drawn24": (["calibration/runs/h100/drawn24.jsonl"], "h100-1"),
        "h100 push_binds": (["calibration/runs/h100/push_binds.jsonl"], "h100-1")}
_path = S.MokSim._path
PATCH = {"on": False}


def _driven_path(self, src, dst, driver):
    path, lat, tr_ = _path(self, src, dst, driver)
    if PATCH["on"] and self.emulated:
        kind, end = ("nvlink-down", dst) if driver == dst else ("nvlink-up", src)
        port = self.fab.port.get((kind, end))
        keep = [(r, w) for r, w in zip(*path) if r == port]
        path = (tuple(r for r, _ in keep), tuple(w for _, w in keep))
    return path, lat, tr_


S.MokSim._path = _driven_path


def workload(r):
    return workload_key(r)[:8]


def score(recs, hardware, engine):
    meas = np.array([r["latency_ms"]["median"] for r in recs])
    pred = predict_records(recs, load_params(None, hardware), engine=engine)
    e = pred / meas - 1
    groups = defaultdict(list)
    for i, r in enumerate(recs):
        groups[workload(r)].append(i)
    reg = []
    for idx in groups.values():
        idx = [i for i in idx if np.isfinite(pred[i])]
        if len(idx) > 1:
            pick = min(idx, key=lambda i: pred[i])
            reg.append(meas[pick] / min(meas[i] for i in idx) - 1)
    ok = np.isfinite(e)
    return 100 * np.mean(abs(e[ok])), 100 * np.max(abs(e[ok])), 100 * np.mean(reg), 100 * np.max(reg)


if __name__ == "__main__":
    t0 = time.time()
    print("| file | n | analytic MAPE / max / regret mean / max | sim shipped | sim patched |")
    print("|---|---:|---|---|---|")
    for name, (files, hardware) in HELD.items():
        recs = forward_records(files)
        cells = [score(recs, hardware, "analytic")]
        for on in (False, True):
            PATCH["on"] = on
            cells.append(score(recs, hardware, "sim"))
        print(f"| {name} | {len(recs)} | " + " | ".join(
            "%.2f / %.1f / %.2f / %.1f" % c for c in cells) + f" |  ({time.time() - t0:.0f} s)",
            flush=True)
