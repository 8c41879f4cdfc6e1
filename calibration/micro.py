"""Stage 1 of calibration: parameters read off microbenchmark records (system "micro-*").

Each microbenchmark isolates one cost term of the model, so its parameters are fitted to it
alone, before the megakernel runs fit the few residual terms:

- micro-copy:   bytes moved by C SMs       -> copy_gbps_per_sm, link_eff
                (time = bytes / min(C x copy rate, link bandwidth x link_eff))
- micro-flag:   flag round trip between SMs -> signal_local_us (one way = half a round trip)
- micro-gemm:   a GEMM of M rows on S SMs   -> gemm_eff (tile-quantized model of analytic.py)
- micro-sync:   launch + device-to-host read -> host_sync_us

A record's sizes are read from its "config" (falling back to top-level fields); the names
accepted for each are listed in FIELDS. A micro system this module does not know, or a record
that lacks a size it needs, is reported in the stage's notes, never silently used or dropped.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import least_squares

from mok_model.analytic import gemm_time
from mok_model.params import BOUNDS, Params
from mok_model.presets import load_hardware

FIELDS = {
    "sms": ("sms", "comm_sms", "blocks", "ctas"),
    "bytes": ("bytes", "total_bytes", "nbytes"),
    "rows": ("rows", "m", "M"),
    "n": ("n", "N", "cols"),
    "k": ("k", "K", "depth"),
    "round_trip": ("round_trip", "roundtrip"),
}


def _get(rec: dict, what: str):
    for src in (rec.get("config") or {}, rec.get("micro") or {}, rec):
        for name in FIELDS[what]:
            if name in src and isinstance(src[name], (int, float)) and not isinstance(src[name], bool):
                return float(src[name])
    return None


def kind(rec: dict) -> str:
    """micro-copy, micro-flag, ... by the system name's prefix (micro-copy-pull -> copy)."""
    name = rec["system"][len("micro-"):]
    for k in ("copy", "flag", "signal", "gemm", "sync", "launch"):
        if name.startswith(k):
            return {"signal": "flag", "launch": "sync"}.get(k, k)
    return name


@dataclass
class MicroResult:
    params: Params
    fitted: dict[str, str] = field(default_factory=dict)  # parameter -> how it was fitted
    notes: list[str] = field(default_factory=list)
    residuals: list[dict] = field(default_factory=list)


def _lsq(fun, x0, lo, hi) -> np.ndarray:
    x0 = np.clip(np.asarray(x0, float), lo, hi)
    return least_squares(fun, x0, bounds=(lo, hi), x_scale=np.maximum(np.abs(x0), 1e-3)).x


def _rows(recs, pred) -> list[dict]:
    return [{"id": r["id"], "measured_ms": r["latency_ms"]["median"], "predicted_ms": float(p),
             "rel_error": float(p / r["latency_ms"]["median"] - 1)} for r, p in zip(recs, pred)]


def fit_micro(records: list[dict], base: Params) -> MicroResult:
    """Fit the stage-1 parameters from the micro-* records among `records`."""
    micro = [r for r in records if r["system"].startswith("micro-")]
    out = MicroResult(base)
    if not micro:
        out.notes.append("no microbenchmark records (system micro-*): stage 1 skipped, priors kept")
        return out
    by: dict[str, list[dict]] = {}
    for r in micro:
        by.setdefault(kind(r), []).append(r)
    values: dict[str, float] = {}
    for k, recs in sorted(by.items()):
        hw = load_hardware(recs[0]["hardware"]["preset"])
        t = np.array([r["latency_ms"]["median"] for r in recs]) * 1e-3  # seconds
        if k == "copy":
            sms, nbytes = [np.array([_get(r, f) for r in recs], dtype=object) for f in ("sms", "bytes")]
            ok = np.array([s is not None and b is not None for s, b in zip(sms, nbytes)])
            if not ok.any():
                out.notes.append(f"micro-copy: {len(recs)} records lack sms and bytes; skipped")
                continue
            recs, t = [r for r, o in zip(recs, ok) if o], t[ok]
            sms, nbytes = sms[ok].astype(float), nbytes[ok].astype(float)
            link = hw.link_gbps * 1e9

            def model(x, sms=sms, nbytes=nbytes, link=link):
                return nbytes / np.minimum(sms * x[0] * 1e9, link * x[1])

            x = _lsq(lambda x: model(x) / t - 1, [base["copy_gbps_per_sm"], base["link_eff"]],
                     [BOUNDS["copy_gbps_per_sm"][0], BOUNDS["link_eff"][0]],
                     [BOUNDS["copy_gbps_per_sm"][1], BOUNDS["link_eff"][1]])
            values.update(copy_gbps_per_sm=float(x[0]), link_eff=float(x[1]))
            out.fitted.update(copy_gbps_per_sm="micro-copy", link_eff="micro-copy")
            out.residuals += _rows(recs, model(x) * 1e3)
        elif k == "flag":
            rt = [bool(_get(r, "round_trip")) for r in recs]
            one_way = np.array([tt * 1e6 / (2 if f else 1) for tt, f in zip(t, rt)])
            values["signal_local_us"] = float(np.clip(np.median(one_way), *BOUNDS["signal_local_us"]))
            out.fitted["signal_local_us"] = "micro-flag (median one-way latency)"
            out.residuals += _rows(recs, [values["signal_local_us"] * (2 if f else 1) * 1e-3 for f in rt])
        elif k == "gemm":
            dims = {f: [_get(r, f) for r in recs] for f in ("rows", "n", "k", "sms")}
            ok = np.array([all(dims[f][i] is not None for f in ("rows", "n", "k"))
                           for i in range(len(recs))])
            if not ok.any():
                out.notes.append(f"micro-gemm: {len(recs)} records lack rows, n, k; skipped")
                continue
            recs, t = [r for r, o in zip(recs, ok) if o], t[ok]
            m = np.array([d for d, o in zip(dims["rows"], ok) if o], float)
            n = np.array([d for d, o in zip(dims["n"], ok) if o], float)
            kk = np.array([d for d, o in zip(dims["k"], ok) if o], float)
            s = np.array([d if d is not None else hw.sms for d, o in zip(dims["sms"], ok) if o], float)
            tm, tn = base["gemm_tile_m"], base["gemm_tile_n"]

            def model(x, m=m, n=n, kk=kk, s=s):
                rate = hw.tflops(recs[0]["precision"]) * 1e12 / hw.sms * x[0]
                return gemm_time(np.ceil(m / tm), n, kk, s, rate, tm, tn)

            x = _lsq(lambda x: model(x) / t - 1, [base["gemm_eff"]], [BOUNDS["gemm_eff"][0]],
                     [BOUNDS["gemm_eff"][1]])
            values["gemm_eff"] = float(x[0])
            out.fitted["gemm_eff"] = "micro-gemm (tile-quantized GEMM time)"
            out.residuals += _rows(recs, model(x) * 1e3)
        elif k == "sync":
            values["host_sync_us"] = float(np.clip(np.median(t) * 1e6, *BOUNDS["host_sync_us"]))
            out.fitted["host_sync_us"] = "micro-sync (median launch + device-to-host read)"
            out.residuals += _rows(recs, [values["host_sync_us"] * 1e-3] * len(recs))
        else:
            out.notes.append(f"micro-{k}: {len(recs)} records of a microbenchmark this stage "
                             f"does not model; not used")
    out.params = base.with_values(**values)
    return out
