"""The library grouped GEMM, measured: `gemm-only` records fit torch_gemm_eff and torch_hbm_eff.

The unfused baselines run their expert GEMMs through the library (torch._grouped_mm for the
routed experts, torch matmul for the shared one: mok_kernels/baselines.py LocalExperts), not
through tiles like the megakernel's. `mok bench --gpus N` times exactly those GEMMs alone on each
rank's ready inputs (system `gemm-only`: the slowest rank per iteration). Their time is the
model's expert_ffn_time with `library=True` on all SMs: row tiles of gemm_tile_m rows at
torch_gemm_eff of the peak tensor rate, floored by reading every active expert's weights at
torch_hbm_eff of the spec HBM bandwidth. Two parameters, two regimes: few rows per expert
(weight reads) and many (tensor rate).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import least_squares

from mok_model.analytic import expert_ffn_time, loads
from mok_model.errors import MokInputError
from mok_model.params import BOUNDS, Params
from mok_model.records import record_scenario, routing_reproduced

SYSTEM = "gemm-only"
FREE = ["torch_gemm_eff", "torch_hbm_eff"]


@dataclass
class GemmFit:
    params: Params
    residuals: list[dict]  # per record: id, measured, predicted, relative error
    ids: list[str]  # the records fitted on


def gemm_only_ms(rec: dict, p: Params) -> float:
    """Predicted time (ms) of a gemm-only record: the slowest rank's routed and shared GEMMs, or
    rank 0's where one GPU emulates the group (what such a record times, as analytic.py reads
    an emulated MoK record)."""
    scn = record_scenario(rec)
    m, ld, tm = scn.model, loads(scn), p["gemm_tile_m"]
    tiles = np.ceil(ld.expert_rows / tm).sum(axis=1)
    active = (ld.expert_rows > 0).sum(axis=1)
    routed = expert_ffn_time(scn, p, ld.rows.astype(np.float64), tiles, active, scn.hardware.sms,
                             m.expert_width, library=True)
    shared = 0.0
    if m.shared_experts:
        shared = float(expert_ffn_time(scn, p, scn.tokens * m.shared_experts,
                                       np.ceil(scn.tokens / tm) * m.shared_experts,
                                       m.shared_experts, scn.hardware.sms, m.shared_width,
                                       shared=True, library=True))
    per_gpu = np.atleast_1d(routed + shared)
    return float(per_gpu[0] if scn.hardware.emulated_ranks else np.max(per_gpu)) * 1e3


def fit_library_gemm(records: list[dict], base: Params) -> GemmFit:
    """Fit FREE to the gemm-only records among `records` (bounded least squares on relative
    error); every other value stays the base's. Records whose routing the model cannot draw
    (records.routing_reproduced) are left out."""
    recs = [r for r in records if r["system"] == SYSTEM and routing_reproduced(r)]
    if len(recs) < len(FREE):
        raise MokInputError(f"{len(recs)} {SYSTEM} records cannot fit {FREE}")
    measured = np.array([r["latency_ms"]["median"] for r in recs])
    lo = np.array([BOUNDS[f][0] for f in FREE])
    hi = np.array([BOUNDS[f][1] for f in FREE])

    def residual(x):
        p = base.with_values(**dict(zip(FREE, x.tolist())))
        return np.array([gemm_only_ms(r, p) for r in recs]) / measured - 1.0

    x0 = np.clip([base[f] for f in FREE], lo, hi)
    sol = least_squares(residual, x0, bounds=(lo, hi), diff_step=1e-3)
    p = base.with_values(**dict(zip(FREE, sol.x.tolist())))
    err = residual(sol.x)
    rows = [{"id": r["id"], "measured_ms": float(m), "predicted_ms": float(m * (1 + e)),
             "rel_error": float(e)} for r, m, e in zip(recs, measured, err)]
    return GemmFit(p, rows, [r["id"] for r in recs])
