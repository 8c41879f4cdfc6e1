"""benchmarks/kernel_space.py: best MoK over GEMMs alone per preset and token band."""

import importlib.util
from pathlib import Path

spec = importlib.util.spec_from_file_location(
    "kernel_space", Path(__file__).parent.parent / "benchmarks" / "kernel_space.py")
ks = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ks)


def _rec(system, tokens, ms, ep=8, kind="uniform"):
    return {"system": system, "model": "glm-5", "ep": ep, "tokens": tokens, "pass": "fwd",
            "precision": "bf16", "routing": {"kind": kind, "seed": 0},
            "latency_ms": {"median": ms}}


def test_best_over_gemm_by_band_and_goal():
    recs = [_rec("gemm-only", 256, 1.0), _rec("mok", 256, 1.6), _rec("mok", 256, 1.4),
            _rec("gemm-only", 4096, 2.0), _rec("mok", 4096, 2.6),
            _rec("gemm-only", 4096, 2.0, ep=16), _rec("mok", 4096, 2.2, ep=16),
            _rec("mok", 8192, 1.0)]                       # no GEMMs-alone record: not counted
    rows = ks.table(recs)
    assert rows[2] == "| glm-5 | 64-512 | 1 | 1.40 | 1.40 (EP 8, 256, uniform) | 1/1 (<= 1.5x) |"
    assert rows[3] == "| glm-5 | 1K-8K | 2 | 1.30 | 1.30 (EP 8, 4096, uniform) | 1/2 (<= 1.2x) |"
    assert len(rows) == 4
