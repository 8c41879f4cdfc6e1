"""Stage 1 of calibration: parameters read off microbenchmark records (system "micro-*").

The records are those calibration/microbench.py writes (sizes and derived rates in "metrics").
Each microbenchmark isolates one cost term of the analytic model, so its parameters are fitted to
it alone (bounded least squares on relative error), before the megakernel runs fit the residual
terms:

- micro-copy      row gather with S programs, `bytes` read+written  -> copy_gbps_per_sm, link_eff
                  (moved bytes = bytes / 2; time = moved / min(S x copy rate, link x link_eff))
- micro-flag      release/acquire ping-pong round trip              -> signal_local_us (one way)
- micro-gemm-sms  the megakernel's compute alone (copy skipped) on C programs -> gemm_eff and
                  sm_scaling (how the GEMM rate grows with the SMs used)
                  (shared expert + minibatches of routed GEMMs, as analytic.py computes them)
- micro-gemm      torch._grouped_mm over expert shapes -> gemm_eff only when micro-gemm-sms is
                  absent (another GEMM implementation than the megakernel's)
- micro-schedule  GPU schedule build (graph replay) vs tokens      -> schedule_us, schedule_ns_per_route
- micro-reduce    the k-slot epilogue reduction                    -> hbm_eff
- micro-launch    op + .item() host round trip                     -> host_sync_us

Any other micro system, or a record without the sizes it needs, is listed in the notes and not used.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
from scipy.optimize import least_squares

from mok_model.analytic import expert_ffn_time, loads, mok_terms
from mok_model.errors import MokInputError
from mok_model.gemm_table import replaces_gemm_eff
from mok_model.params import BOUNDS, Params
from mok_model.presets import load_hardware

from .fit import record_scenario


@dataclass
class MicroResult:
    params: Params
    fitted: dict[str, str] = field(default_factory=dict)  # parameter -> microbenchmark
    notes: list[str] = field(default_factory=list)
    residuals: list[dict] = field(default_factory=list)


def _metric(rec: dict, *names: str):
    for src in (rec.get("metrics") or {}, rec.get("config") or {}):
        for n in names:
            v = src.get(n)
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                return float(v)
    return None


SIZES = ("sms", "bytes", "rows_per_expert", "experts", "compute_programs", "tokens", "rows")


def latest(micro: list[dict]) -> tuple[list[dict], int]:
    """Keep the newest record of each (system, model, tokens, sizes): microbenchmarks are re-run
    after kernel changes and records are append-only."""
    newest: dict[tuple, dict] = {}
    for r in micro:
        key = _key_of(r)
        if key not in newest or r["date"] >= newest[key]["date"]:
            newest[key] = r
    kept = [r for r in micro if newest.get(_key_of(r)) is r]
    return kept, len(micro) - len(kept)


def _key_of(r: dict) -> tuple:
    m = r["model"] if isinstance(r["model"], str) else str(sorted(r["model"].items()))
    return (r["system"], m, r["tokens"], tuple(_metric(r, s) for s in SIZES))


def fit_terms(recs: list[dict], base: Params, names: list[str],
              model: Callable[[Params], np.ndarray]) -> tuple[dict[str, float], list[dict]]:
    """Fit `names` so that model(params) (seconds per record) matches the records' medians."""
    t = np.array([r["latency_ms"]["median"] for r in recs]) * 1e-3
    lo = np.array([BOUNDS[n][0] for n in names], float)
    hi = np.array([BOUNDS[n][1] for n in names], float)
    x0 = np.clip([base[n] for n in names], lo, hi)
    scale = np.where(np.abs(x0) > 1e-9, np.abs(x0), np.maximum((hi - lo) * 0.01, 1e-3))

    def res(x):
        return model(base.with_values(**dict(zip(names, (x * scale).tolist())))) / t - 1.0

    sol = least_squares(res, x0 / scale, bounds=(lo / scale, hi / scale), diff_step=1e-3)
    values = dict(zip(names, (sol.x * scale).tolist()))
    pred = model(base.with_values(**values)) * 1e3
    rows = [{"id": r["id"], "system": r["system"], "measured_ms": float(m * 1e3),
             "predicted_ms": float(p), "rel_error": float(p / (m * 1e3) - 1)}
            for r, m, p in zip(recs, t, pred)]
    return values, rows


def _copy_model(recs):
    hw = load_hardware(recs[0]["hardware"]["preset"])  # its model names the row width only
    sms = np.array([_metric(r, "sms") for r in recs])
    moved = np.array([_metric(r, "bytes") for r in recs]) / 2.0

    def model(p):
        return moved / np.minimum(sms * p["copy_gbps_per_sm"] * 1e9, hw.link_gbps * 1e9 * p["link_eff"])
    return model


# calibration/microbench.py bench_gemm_sms: 8 comm programs (copy skipped), push combine, 4096-row
# minibatches; its records' "config" holds the defaults, not these values
GEMM_SMS_COMM, GEMM_SMS_MINIBATCH = 8, 4096


def _compute_model(recs):
    """The megakernel's compute alone on C compute programs (rank 0 of the record's EP): the
    shared expert and the minibatches of routed GEMMs; the comm programs, with nothing to copy,
    join the compute as the analytic model lets them (comm_join_share with an epilogue combine)."""
    scns = [record_scenario(r) for r in recs]
    progs = np.array([_metric(r, "compute_programs") for r in recs])
    mbs = np.full(len(recs), float(GEMM_SMS_MINIBATCH))

    def model(p):
        out = []
        ws = p.values.get("wave_sync", 1.0)
        join = p.values.get("comm_join_share", 0.0) if p.values.get("combine_in_epilogue", 0.0) >= 0.5 else 0.0
        for scn, cx, mb in zip(scns, progs, mbs):
            cx = cx + join * GEMM_SMS_COMM
            ld, m = loads(scn), scn.model
            rows = float(ld.rows[0])
            M = max(np.ceil(rows / mb), 1.0)
            # a minibatch boundary inside an expert splits a tile, unless the kernel cuts
            # minibatches on tile boundaries (mok_kernels/schedule.py does; parameter name
            # proposed to the model: tile_aligned_minibatches)
            split = 1.0 - p.values.get("tile_aligned_minibatches", 0.0)
            tiles = np.ceil(ld.expert_rows[0] / p["gemm_tile_m"]).sum() + split * (M - 1)
            touched = (ld.expert_rows[0] > 0).sum() + (M - 1)
            ffn = expert_ffn_time(scn, p, rows / M, tiles / M, touched / M, cx, m.expert_width,
                                  wave_sync=ws)
            shared = 0.0
            if m.shared_experts:
                shared = expert_ffn_time(scn, p, scn.tokens * m.shared_experts,
                                         np.ceil(scn.tokens / p["gemm_tile_m"]) * m.shared_experts,
                                         m.shared_experts, cx, m.shared_width, shared=True,
                                         wave_sync=ws)
            out.append(shared + M * (ffn + p["minibatch_overhead_us"] * 1e-6))
        return np.array(out, float)
    return model


def _grouped_gemm_model(recs):
    scns = [record_scenario(r) for r in recs]
    rpe = np.array([_metric(r, "rows_per_expert") for r in recs])
    el = np.array([_metric(r, "experts") for r in recs])

    def model(p):
        return np.array([float(expert_ffn_time(s, p, r * e, e * np.ceil(r / p["gemm_tile_m"]), e,
                                               s.hardware.sms, s.model.expert_width))
                         for s, r, e in zip(scns, rpe, el)])
    return model


def _schedule_model(recs):
    scns = [record_scenario(r) for r in recs]

    def model(p):
        a = lambda *v: np.array(v)  # noqa: E731
        return np.array([float(mok_terms(s, p, a(False), a(True), a(4096), a(32), a(131072),
                                         a(0.5))["terms"]["schedule"][0]) for s in scns])
    return model


# the slots calibration/microbench.py bench_swiglu_reduce reduces per token (its records say
# "k=8" in their note; those since session 30 also name it, metrics "k")
REDUCE_SLOTS = 8


def _reduce_model(recs):
    """The k-slot epilogue reduction: rows of the record's hidden width (its model names only
    that: {"hidden": H}; it is no layer, so no preset fills the rest) read k + 2 times."""
    n = np.array([_metric(r, "tokens") or r["tokens"] for r in recs])
    hidden = np.array([_hidden(r) for r in recs], float)
    k = np.array([_metric(r, "k") or REDUCE_SLOTS for r in recs], float)
    hbm = np.array([load_hardware(r["hardware"]["preset"]).hbm_tbps for r in recs])

    def model(p):
        return n * hidden * 2.0 * (k + 2) / (hbm * 1e12 * p["hbm_eff"])
    return model


def _hidden(rec: dict) -> int:
    """The row width a microbenchmark record moved: its model's hidden (a shape or a preset)."""
    from mok_model.presets import load_model

    m = rec["model"]
    if isinstance(m, dict):
        if "hidden" not in m:
            raise MokInputError(f"{rec.get('_file', 'record')}:{rec.get('_line', rec['id'])}: "
                                f"{rec['system']} model {m!r} must name its hidden width")
        return int(m["hidden"])
    return load_model(m).hidden


# micro system -> (parameters, metrics it needs, model builder)
STAGES: dict[str, tuple[list[str], tuple[str, ...], Callable]] = {
    "micro-copy": (["copy_gbps_per_sm", "link_eff"], ("sms", "bytes"), _copy_model),
    "micro-gemm-sms": (["gemm_eff"] + (["sm_scaling"] if "sm_scaling" in BOUNDS else []),
                       ("compute_programs",), _compute_model),
    "micro-schedule": (["schedule_us", "schedule_ns_per_route"], (), _schedule_model),
    "micro-reduce": (["hbm_eff"], (), _reduce_model),
}


def fit_micro(records: list[dict], base: Params) -> MicroResult:
    """Fit the stage-1 parameters from the micro-* records among `records`."""
    micro = [r for r in records if r["system"].startswith("micro-")]
    out = MicroResult(base)
    if not micro:
        out.notes.append("no microbenchmark records (system micro-*): stage 1 skipped, priors kept")
        return out
    micro, superseded = latest(micro)
    if superseded:
        out.notes.append(f"{superseded} micro records superseded by a later measurement of the "
                         f"same benchmark and size; only the latest are used")
    by: dict[str, list[dict]] = {}
    for r in micro:
        by.setdefault(r["system"], []).append(r)
    stages = dict(STAGES)
    if "micro-gemm-sms" not in by:
        stages["micro-gemm"] = (["gemm_eff"], ("rows_per_expert", "experts"), _grouped_gemm_model)
    p = base
    for system, (names, needs, builder) in stages.items():
        recs = [r for r in by.get(system, []) if all(_metric(r, n) is not None for n in needs)]
        if len(by.get(system, [])) > len(recs):
            out.notes.append(f"{system}: {len(by[system]) - len(recs)} records lack {needs}; not used")
        if replaces_gemm_eff(base.gemm_table):  # a measured GEMM table replaces gemm_eff
            names = [n for n in names if n != "gemm_eff"]
        if not recs or not names:
            continue
        values, rows = fit_terms(recs, p, names, builder(recs))
        p = p.with_values(**values)
        out.fitted.update({n: system for n in names})
        out.residuals += rows
    if "micro-flag" in by:
        rt = [(_metric(r, "roundtrip_us") or r["latency_ms"]["median"] * 1e3) for r in by["micro-flag"]]
        v = float(np.clip(np.median(rt) / 2, *BOUNDS["signal_local_us"]))
        p = p.with_values(signal_local_us=v)
        out.fitted["signal_local_us"] = "micro-flag"
        out.residuals += [{"id": r["id"], "system": "micro-flag", "measured_ms": x * 1e-3,
                           "predicted_ms": 2 * v * 1e-3, "rel_error": 2 * v / x - 1}
                          for r, x in zip(by["micro-flag"], rt)]
    if "micro-launch" in by:
        xs = [_metric(r, "op_plus_item_us") for r in by["micro-launch"]]
        xs = [x for x in xs if x is not None]
        if xs:
            p = p.with_values(host_sync_us=float(np.clip(np.median(xs), *BOUNDS["host_sync_us"])))
            out.fitted["host_sync_us"] = "micro-launch (op + .item())"
    used = set(stages) | {"micro-flag", "micro-launch", "micro-gemm"}
    for system in sorted(set(by) - used):
        out.notes.append(f"{system}: {len(by[system])} records of a microbenchmark the model has "
                         f"no separate term for; not used")
    if "micro-gemm" in by and "micro-gemm-sms" in by:  # stages held micro-gemm only without it
        out.notes.append("micro-gemm (torch._grouped_mm) not used for gemm_eff: micro-gemm-sms "
                         "measures the megakernel's own GEMMs")
    out.params = p
    return out
