"""Fit a hardware's fabric parameters to NVLink microbenchmark records (calibration/nvlink_bench.py).

    python -m calibration.fit_fabric RUN_FILES... --out PARAMS.json [--base PARAMS.json]
                                     [--hardware NAME] [--allow-emulated] [--json]

Starts from --base (default: the shipped mok_model/params/<hardware>.json) and replaces, where a
measurement exists, and only there:

- copy_gbps_per_sm   micro-nvlink-copy, pull: time = bytes / min(S x rate, L_pull), fitted over S
- push_copy_scale    micro-nvlink-copy, push: the same fit's per-SM rate / the pull rate
- link_eff           micro-nvlink-bidir (both directions at once, as in an all-to-all): mean
                     per-direction rate / the preset's link_gbps; without bidir records, the
                     mean of the one-way saturation rates L_pull and L_push
- signal_remote_us   micro-nvlink-signal with one slot: half the median round trip
- push_signal_per_peer_us  micro-nvlink-signal: slope of the round trip over the slot count
- nccl_peer_gbps     micro-nccl-alltoall: per peer count k, the rate R_k of a line time = a_k +
                     bytes / R_k over the message sizes; the mean R_k / k of the peer counts
                     that are not link-bound (R_k / k at least SATURATED of the best)
- nccl_eff           micro-nccl-alltoall: where some peer count is link-bound, its mean R_k over
                     link_gbps x link_eff; where none is (two GPUs: one peer is all there is),
                     raised to the largest R_k's share only if the base's is below it (a bound)

Each replaced value's source names the records (files, count, system), what was fitted and the
command; "fabric_fit" in the file holds the record ids per parameter, the residuals and the
measurements the model has no term for (GEMM rate beside copying SMs). Emulated-peer records (one
GPU, local HBM) are refused unless --allow-emulated. Bad input: one line
`python -m calibration.fit_fabric: error: ...`, exit 2.
"""

from __future__ import annotations

from pathlib import Path

import argparse
import json
import sys
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import least_squares

from mok_model.baselines import nccl_alltoall_s
from mok_model.cli import MokParser
from mok_model.errors import MokInputError
from mok_model.fileio import check_output_file, deferred_warnings
from mok_model.params import BOUNDS, PARAMS_DIR, Params, write_params
from mok_model.params import SCHEMA as PARAMS_SCHEMA
from mok_model.presets import Hardware, load_hardware
from mok_model.records import read_records

from .checks import params_file, required_text, shipped_params

SYSTEMS = ("micro-nvlink-copy", "micro-nvlink-bidir", "micro-nvlink-signal", "micro-nvlink-gemm-copy",
           "micro-nccl-alltoall")
SATURATED = 0.85   # a peer count whose rate per peer is below this share of the best is link-bound


@dataclass
class FabricFit:
    params: Params
    fitted: dict[str, dict] = field(default_factory=dict)  # name -> value, how, record ids, files
    notes: list[str] = field(default_factory=list)
    residuals: list[dict] = field(default_factory=list)
    measurements: dict = field(default_factory=dict)


def _m(rec: dict, name: str):
    return (rec.get("metrics") or {}).get(name)


def copy_seconds(sms: np.ndarray, nbytes: np.ndarray, gbps_per_sm: float, link_gbps: float) -> np.ndarray:
    """The analytic model's copy time: bytes over min(programs x per-SM rate, link rate)."""
    return nbytes / np.minimum(sms * gbps_per_sm * 1e9, link_gbps * 1e9)


def fit_sweep(recs: list[dict]) -> tuple[float, float, list[dict]]:
    """(per-SM GB/s, saturated GB/s, residual rows) fitted to copy records over programs S
    (least squares on log time; both parameters free)."""
    sms = np.array([float(_m(r, "sms")) for r in recs])
    nb = np.array([float(_m(r, "bytes")) for r in recs])
    t = np.array([r["latency_ms"]["median"] * 1e-3 for r in recs])
    rate = nb / t / 1e9
    x0 = np.log([np.max(rate[sms <= np.min(sms) * 2] / sms[sms <= np.min(sms) * 2]), np.max(rate)])

    def res(x):
        return np.log(copy_seconds(sms, nb, np.exp(x[0]), np.exp(x[1])) / t)

    sol = least_squares(res, x0, x_scale=1.0)
    c, link = np.exp(sol.x)
    pred = copy_seconds(sms, nb, c, link) * 1e3
    rows = [{"id": r["id"], "system": r["system"], "direction": _m(r, "direction"), "sms": s,
             "measured_ms": float(tm * 1e3), "predicted_ms": float(p), "rel_error": float(p / (tm * 1e3) - 1)}
            for r, s, tm, p in zip(recs, sms.tolist(), t, pred)]
    return float(c), float(link), rows


def _clip(name: str, v: float, notes: list[str]) -> float:
    lo, hi = BOUNDS[name]
    if not lo <= v <= hi:
        notes.append(f"{name}: measured {v:.4g} lies outside the model's bounds [{lo}, {hi}] "
                     f"(mok_model/params.py); clipped to {min(max(v, lo), hi):.4g}")
    return float(min(max(v, lo), hi))


def _in_repo(path: str) -> str:
    """A record file's path relative to the repository when it lies inside it (a parameters file
    must not cite paths that only exist on the machine that fitted it)."""
    root = Path(__file__).resolve().parents[1]
    try:
        return str(Path(path).resolve().relative_to(root))
    except ValueError:
        return path


def nccl_rates(recs: list[dict]) -> dict[int, tuple[float, float, list[dict]]]:
    """Per peer count k with at least two message sizes: (R_k GB/s per rank, a_k us, records)
    of the least-squares line time = a_k + bytes per rank / R_k."""
    rates = {}
    for k in sorted({int(_m(r, "peers")) for r in recs}):
        mine = [r for r in recs if int(_m(r, "peers")) == k]
        nb = np.array([k * float(_m(r, "bytes_per_peer")) for r in mine])
        if len(set(nb.tolist())) < 2:
            continue
        t = np.array([r["latency_ms"]["median"] * 1e-3 for r in mine])
        slope, icpt = np.polyfit(nb, t, 1)
        if slope > 0:
            rates[k] = (1.0 / slope / 1e9, float(icpt) * 1e6, mine)
    return rates


def fit_nccl(recs: list[dict], link_share: float, base: Params, put, out: FabricFit) -> None:
    """nccl_peer_gbps and nccl_eff from micro-nccl-alltoall records (module docstring)."""
    rates = nccl_rates(recs)
    if not rates:
        out.notes.append("micro-nccl-alltoall: no peer count at two or more message sizes whose "
                         "time grows with the bytes; nothing fitted")
        return
    out.measurements["nccl_alltoall"] = {str(k): {"GBps_per_rank": r, "fixed_us": a}
                                         for k, (r, a, _) in rates.items()}
    out.notes.append("micro-nccl-alltoall: the fixed GPU cost of one all-to-all (fixed_us under "
                     "measurements) has no term in the model beyond one link latency a peer")
    per_peer = {k: r / k for k, (r, _, _) in rates.items()}
    best = max(per_peer.values())
    free = [k for k in rates if per_peer[k] >= SATURATED * best]
    bound = [k for k in rates if k not in free]
    put("nccl_peer_gbps", float(np.mean([per_peer[k] for k in free])),
        "rate per peer, " + ", ".join(f"{k} peer(s) {per_peer[k]:.1f}" for k in free) + " GB/s",
        [r for k in free for r in rates[k][2]])
    if bound:
        eff = float(np.mean([rates[k][0] for k in bound])) / link_share
        put("nccl_eff", eff, "link-bound peer counts " + ", ".join(
            f"{k}: {rates[k][0]:.0f}" for k in bound) + f" GB/s per rank over {link_share:.0f} GB/s "
            "(link_gbps x link_eff)", [r for k in bound for r in rates[k][2]])
        return
    top = max(rates)
    floor = rates[top][0] / link_share
    if base["nccl_eff"] < floor:
        put("nccl_eff", floor, f"a lower bound: {top} peer(s) moved {rates[top][0]:.0f} GB/s per "
            f"rank, {floor:.3f} of {link_share:.0f} GB/s, and no peer count was link-bound",
            rates[top][2])
    else:
        out.notes.append(f"micro-nccl-alltoall: no peer count is link-bound (up to {top}), so "
                         f"nccl_eff is not measured; the base's {base['nccl_eff']:.3g} stays (it "
                         f"is above the {floor:.3f} the runs bound it by)")


def nccl_residual(rec: dict, hardware: Hardware, p: Params) -> dict:
    """A micro-nccl-alltoall record against the model's time for it (baselines.nccl_alltoall_s)."""
    ms = rec["latency_ms"]["median"]
    pred = nccl_alltoall_s(hardware, p, int(_m(rec, "peers")), float(_m(rec, "bytes_per_peer"))) * 1e3
    return {"id": rec["id"], "system": rec["system"], "peers": int(_m(rec, "peers")),
            "bytes_per_peer": _m(rec, "bytes_per_peer"), "measured_ms": ms, "predicted_ms": pred,
            "rel_error": pred / ms - 1}


def fit_fabric(records: list[dict], base: Params, hardware: Hardware) -> FabricFit:
    """Replace the fabric parameters of `base` that the micro-nvlink-* and micro-nccl-alltoall
    records measure on `hardware`."""
    link_gbps = hardware.link_gbps
    by: dict[str, list[dict]] = {}
    for r in records:
        if r["system"] in SYSTEMS:
            by.setdefault(r["system"], []).append(r)
    out = FabricFit(base)
    if not by:
        out.notes.append(f"no records of {SYSTEMS}: nothing fitted, every value is the base's")
        return out
    values: dict[str, float] = {}

    def put(name: str, v: float, how: str, recs: list[dict]) -> None:
        values[name] = _clip(name, v, out.notes)
        out.fitted[name] = {"value": values[name], "how": how, "records": [r["id"] for r in recs],
                            "files": sorted({_in_repo(r.get("_file", "?")) for r in recs})}

    copies = by.get("micro-nvlink-copy", [])
    sweeps = {}
    for d in ("pull", "push"):
        recs = [r for r in copies if _m(r, "direction") == d and _m(r, "sms") and _m(r, "bytes")]
        if len({_m(r, "sms") for r in recs}) >= 2:
            c, link, rows = fit_sweep(recs)
            sweeps[d] = (c, link, recs)
            out.residuals += rows
            out.measurements[f"copy_{d}"] = {"gbps_per_sm": c, "saturated_gbps": link,
                                             "link_fraction": link / link_gbps}
        elif recs:
            out.notes.append(f"micro-nvlink-copy {d}: {len(recs)} records at fewer than two program "
                             f"counts; a per-SM rate and a link rate need at least two; not used")
    if "pull" in sweeps:
        c, link, recs = sweeps["pull"]
        put("copy_gbps_per_sm", c, f"pull (remote read) sweep: {c:.2f} GB/s per copy program, "
            f"saturating at {link:.0f} GB/s", recs)
    if "push" in sweeps and "pull" in sweeps:
        cp, lp, recs = sweeps["push"]
        put("push_copy_scale", cp / sweeps["pull"][0], f"push (remote write) sweep: {cp:.2f} GB/s "
            f"per copy program over the pull sweep's {sweeps['pull'][0]:.2f}", recs + sweeps["pull"][2])
    bidir = [r for r in by.get("micro-nvlink-bidir", []) if _m(r, "bytes")]
    if bidir:
        per_dir = [float(_m(r, "bytes")) / (r["latency_ms"]["median"] * 1e-3) / 1e9 for r in bidir]
        each = ", ".join(f"{_m(r, 'direction')} {g:.0f}" for r, g in zip(bidir, per_dir))
        put("link_eff", float(np.mean(per_dir)) / link_gbps,
            f"both directions at once: {each} GB/s per direction over {link_gbps:.0f} GB/s", bidir)
    elif sweeps:
        each = ", ".join(f"{d} {s[1]:.0f}" for d, s in sweeps.items())
        put("link_eff", float(np.mean([s[1] for s in sweeps.values()])) / link_gbps,
            f"one-way saturation {each} GB/s over {link_gbps:.0f} GB/s (no both-directions records)",
            [r for s in sweeps.values() for r in s[2]])

    sig = [r for r in by.get("micro-nvlink-signal", []) if _m(r, "peers")]
    rt = np.array([float(_m(r, "roundtrip_us") or r["latency_ms"]["median"] * 1e3) for r in sig])
    peers = np.array([float(_m(r, "peers")) for r in sig])
    one = [r for r, p in zip(sig, peers) if p == 1]
    if one:
        v = float(np.median(rt[peers == 1]))
        put("signal_remote_us", v / 2, f"half the median system-scope flag round trip {v:.3f} us "
            f"(one slot)", one)
    if len(set(peers.tolist())) >= 2:
        slope, icpt = np.polyfit(peers, rt, 1)
        put("push_signal_per_peer_us", float(slope), f"round trip over slots signalled: "
            f"{icpt:.3f} + {slope:.3f} us per slot (one writer's release atomics plus the "
            f"consumer's polls, in series; an upper bound on concurrent writers' cost)", sig)
        out.residuals += [{"id": r["id"], "system": r["system"], "peers": int(p),
                           "measured_ms": float(x) * 1e-3, "predicted_ms": float(icpt + slope * p) * 1e-3,
                           "rel_error": float((icpt + slope * p) / x - 1)} for r, p, x in zip(sig, peers, rt)]
    elif sig:
        out.notes.append("micro-nvlink-signal: one slot count only; push_signal_per_peer_us not fitted")

    nccl = [r for r in by.get("micro-nccl-alltoall", []) if _m(r, "peers") and _m(r, "bytes_per_peer")]
    if nccl:
        link_share = link_gbps * values.get("link_eff", base["link_eff"])
        fit_nccl(nccl, link_share, base, put, out)

    gc = by.get("micro-nvlink-gemm-copy", [])
    if gc:
        sms = int(gc[0]["hardware"].get("sms") or 132)
        out.measurements["gemm_beside_copy"] = [
            {"copy_sms": _m(r, "copy_sms"), "gemm_rate_vs_alone": _m(r, "ratio"),
             "if_gemm_lost_only_those_sms": (sms - _m(r, "copy_sms")) / sms,
             "copy_outlasted_gemm": _m(r, "copy_outlasted_gemm"), "id": r["id"]} for r in gc]
        out.notes.append("micro-nvlink-gemm-copy: the GEMM's rate beside a copy; the model's GEMMs "
                         "lose only the comm SMs (compute SMs = SMs - comm SMs), and its one "
                         "interference term is the other way, the copy slowed beside GEMMs "
                         "(copy_slowdown_beside_gemm, fitted to layer records); the measured "
                         "ratios are under fabric_fit.measurements")
    out.params = base.with_values(**values)
    out.residuals += [nccl_residual(r, hardware, out.params) for r in nccl]
    return out


def main(argv: list[str]) -> int:
    p = MokParser(prog="python -m calibration.fit_fabric", description=__doc__,
                  formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("runs", nargs="+")
    p.add_argument("--out", required=True)
    p.add_argument("--base", default=None, help="parameters to start from (default: shipped)")
    p.add_argument("--hardware", default=None, help="preset (default: the records' one preset)")
    p.add_argument("--allow-emulated", action="store_true", help="accept emulated-peer records")
    p.add_argument("--json", action="store_true")
    try:
        with deferred_warnings():   # a warning waits until the input passed (one error line)
            a, base, records, hw_name, res = _checked_fit(p, argv)
    except MokInputError as exc:
        print(f"{p.prog}: error: {exc}", file=sys.stderr)
        return 2
    cmd = "python -m calibration.fit_fabric " + " ".join(argv)
    files = sorted({r["_file"] for r in records})
    sources = dict(base.sources)
    for name, f in res.fitted.items():
        systems = ", ".join(sorted({r["system"] for r in records if r["id"] in f["records"]}))
        sources[name] = (f"measured: fitted to {len(f['records'])} {systems} records in "
                         f"{', '.join(f['files'])}: {f['how']} (`{cmd}`)")
    fitted_on = list(base.fitted_on) + [x for x in files if x not in base.fitted_on]
    params = Params(res.params.values, hw_name, None, fitted_on, sources)
    write_params(a.out, params, f"{base.path}, with the fabric parameters {sorted(res.fitted) or 'none'} "
                 f"replaced by fits to NVLink microbenchmark records ({cmd}).",
                 {"fabric_fit": {"command": cmd, "fitted": res.fitted, "notes": res.notes,
                                 "measurements": res.measurements, "residuals": res.residuals}})
    if a.json:
        print(json.dumps({"out": a.out, "fitted": {k: v["value"] for k, v in res.fitted.items()},
                          "notes": res.notes, "measurements": res.measurements}))
    else:
        for name, f in res.fitted.items():
            print(f"{name:26s} {base[name]:>10.4g} -> {f['value']:<10.4g} {f['how']}")
        for n in res.notes:
            print(f"note: {n}")
        print(f"wrote {a.out}")
    return 0


def _checked_fit(p: MokParser, argv: list[str]) -> tuple:
    """The arguments, base parameters, records, hardware and fit, every input checked first."""
    a = p.parse_args(argv)
    # rewritten whole (said); another preset's default file never (as mok calibrate --out)
    check_output_file(a.out, "--out", ".json", replaces=(PARAMS_SCHEMA,))
    required_text(a.hardware, "--hardware", "preset name")
    base = params_file(a.base, "--base") if a.base is not None else None
    records = [r for r in read_records(a.runs) if r["system"] in SYSTEMS]
    if not records:
        raise MokInputError(f"no records of {', '.join(SYSTEMS)} in {' '.join(a.runs)}")
    emulated = [r for r in records if r["emulated_peers"]]
    if emulated and not a.allow_emulated:
        r = emulated[0]
        raise MokInputError(f"{r['_file']}:{r['_line']}: emulated_peers is true (one GPU, the peer in "
                            f"local HBM): not a fabric measurement; pass --allow-emulated to fit it anyway")
    presets = sorted({r["hardware"]["preset"] for r in records})
    hw_name = a.hardware if a.hardware is not None else (presets[0] if len(presets) == 1
                                                         else None)
    if hw_name is None or presets != [hw_name]:
        raise MokInputError(f"records of hardware {presets}; --hardware names one preset and "
                            f"every record must be of it")
    if base is None:
        base = shipped_params(hw_name, other="--base FILE")
    if base.hardware != hw_name:
        raise MokInputError(f"--base {a.base!r} is for hardware {base.hardware!r}, not "
                            f"{hw_name!r}")
    out = Path(a.out).resolve()
    if out.parent == PARAMS_DIR.resolve() and out.stem != hw_name:
        raise MokInputError(f"--out {a.out!r} is the default parameters file of {out.stem}, and "
                            f"these records are {hw_name}'s: name {hw_name}.json or a file "
                            f"outside {PARAMS_DIR.name}/")
    return a, base, records, hw_name, fit_fabric(records, base, load_hardware(hw_name))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
