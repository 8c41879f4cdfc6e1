"""Session 38 scratch (kept as the record of how docs/calibration.md "Session 38" was computed):
the analytic model against benchmarks/copy_beside_gemm.py's launches. The copies form is
predicted with the GEMM terms zeroed (expert_ffn_time and list_period patched to 0, and no
slowdown); launch time = latency minus the launch, schedule, reduction and fixed terms.

    PYTHONPATH=. python3 mok_kernels/logs_s38/model_vs_copies.py   # ~2 min on 2 cores
"""
import json
from pathlib import Path

import numpy as np

import mok_model.analytic as an
from mok_model.params import PARAMS_DIR, read_params
from mok_model.predict import predict
from mok_model.presets import load_hardware, load_model
from mok_model.scenario import Config, Scenario

HERE = Path(__file__).parent
BASE, HW = read_params(PARAMS_DIR / "h200-1.json"), load_hardware("h200-1")
FFN, LP, CBG = an.expert_ffn_time, an.list_period, an.copy_beside_gemm
NOGEMM = {"on": False}


def zero(*a, **k):
    return np.asarray(a[2], dtype=float) * 0.0


def whole_copy(copy, gemm, s):
    """The slowdown over the whole copy wherever GEMMs run beside it (tried, not shipped)."""
    copy = np.asarray(copy, dtype=np.float64)
    g = np.broadcast_to(np.asarray(gemm, dtype=np.float64), copy.shape)
    return np.where((g > 0) & (not NOGEMM["on"]) & (s > 0), 1 / (1 - s), 1.0) * np.ones_like(copy)


def shipped(copy, gemm, s):
    return CBG(copy, gemm, 0.0 if NOGEMM["on"] else s)


def measured():
    rows = {}
    for line in open(HERE / "copy_beside_gemm.jsonl"):
        r = json.loads(line)
        w, k = r["workload"], r["knobs"]
        key = (w["model"], w["ep"], w["tokens"], k["combine"], k["minibatch"], k["comm_sms"])
        rows.setdefault(key, {"w": w, "k": k})[r["form"]] = r["launch_ms"]["median"]
    return rows


def score(rows, scale, s, form):
    an.copy_beside_gemm = form
    p = BASE.with_values(copy_gbps_per_sm=BASE["copy_gbps_per_sm"] * scale,
                         copy_slowdown_beside_gemm=s)
    err = {"pass": [], "copies": []}
    for d in rows.values():
        w = d["w"]
        scn = Scenario(HW, load_model(w["model"]), w["ep"], w["tokens"], "fwd", "bf16",
                       w["routing"], w["seed"])
        for f in err:
            NOGEMM["on"] = f == "copies"
            an.expert_ffn_time, an.list_period = (zero, zero) if NOGEMM["on"] else (FFN, LP)
            pr = predict(scn, Config(**d["k"]), params=p, refuse_overflow=False)
            b = pr.breakdown_ms
            t = pr.latency_ms - sum(b.get(x, 0) for x in ("launch", "schedule", "reduction", "fixed"))
            err[f].append(t / d[f] - 1)
    an.expert_ffn_time, an.list_period, an.copy_beside_gemm = FFN, LP, CBG
    e, c = np.array(err["pass"]), np.array(err["copies"])
    print(f"{form.__name__:10s} rate x{scale:.2f} s {s:.2f}: pass MAPE {np.abs(e).mean():.1%} "
          f"max {np.abs(e).max():.1%} mean {e.mean():+.1%} | copies MAPE {np.abs(c).mean():.1%} "
          f"mean {c.mean():+.1%}")


if __name__ == "__main__":
    rows = measured()
    for form, scale, s in ((shipped, 1.0, 0.0), (shipped, 1.3, 0.3), (whole_copy, 1.3, 0.3)):
        score(rows, scale, s, form)
