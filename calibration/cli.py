"""`mok calibrate` and `mok validate`: fit a parameters file to run records, and judge one.

    mok calibrate RUN_FILES... --out PARAMS.json [--holdout-by KEY [--holdout VALUE]]
                  [--hardware NAME] [--engine analytic|sim] [--free P1,P2]
                  [--band bootstrap|linear|none] [--band-samples N] [--band-seed S] [--json]
    mok validate  RUN_FILES... --params PARAMS.json [--engine analytic|sim] [--plot FILE.png]
                  [--color-by KNOB] [--heldout-only] [--allow-params-mismatch] [--json]

Both print `mok: error: ...` (one line) and return 2 on bad input.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from mok_model.cli import MokParser, int_at_least
from mok_model.errors import MokInputError
from mok_model.fileio import check_beside_output, check_output_file, flush_warnings, warn
from mok_model.gemm_table import read_table, replaces_gemm_eff
from mok_model.params import (BOUNDS, PARAMS_DIR, Params, fit_record_path, read_fit_record,
                              read_params, write_params)
from mok_model.params import SCHEMA as PARAMS_SCHEMA
from mok_model.records import (KNOBS, in_id_order, model_records, read_records, record_copy_loop,
                               record_where, slowed, SLOWED_WHY)
from mok_model.scenario import ENGINES, MAX_SEED

from .checks import param_names, params_file, required_text
from .fit import BAND_SAMPLES, BAND_SEED, BANDS, fit
from .micro import fit_micro
from .priors import BLACKWELL, H200_LOCAL, HOPPER, prior_params
from .split import check_key, group_values, split
from .validate import error_by, evaluate, plot, record_bands, validate


# band samples: each is a refit of the free parameters (50 take seconds; more than this would
# look like a hang)
MAX_BAND_SAMPLES = 10_000


def busy(desc: str, show: bool):
    """An elapsed-time progress bar on stderr where the job may be long."""
    import contextlib

    from mok_model.progress import busy as _busy

    return _busy(desc) if show else contextlib.nullcontext()


def priors_for(hardware: str) -> Params:
    """First-principles parameters for a hardware: Hopper families or Blackwell-and-later."""
    if hardware == "h200-1":
        return prior_params(hardware, H200_LOCAL)
    if hardware.startswith(("h100", "h200")):
        return prior_params(hardware, HOPPER)
    return prior_params(hardware, BLACKWELL)


def default_free(records: list[dict], micro_fitted: set[str]) -> list[str]:
    """The few residual parameters the layer records can identify.

    MoK records: gemm_eff (unless a micro-gemm fixed it) and mok_fixed_us; minibatch_overhead_us
    when the records vary the minibatch; copy_gbps_per_sm and sm_scaling when
    they vary the comm SMs (starting from the microbenchmarks' values), serial_copy_scale when
    they mix the oldest copy loop and a newer one (records.record_copy_loop; pipe_copy_scale is
    measured, never freed here); push_copy_scale
    when they mix push and pull across GPUs, push_scan_us when emulated-peer runs do,
    push_pass_us when forward runs do;
    ring_refill_overlap when a ring holds under two minibatches;
    wgrad_bytes_per_weight with published backward records, bwd_gemm_eff_scale and wgrad_tile_us
    with measured ones (our backward megakernel), fp8_gemm_eff with FP8 records. Baselines:
    nccl_eff, nccl_peer_gbps and host_launch_scale with nccl-torch records (a parameter the
    records cannot move, e.g. nccl_eff where one peer's channels bind, stays where it starts).
    """
    mok = [r for r in records if r["system"] == "mok"]
    free: list[str] = []
    if mok:
        if "gemm_eff" not in micro_fitted:
            free.append("gemm_eff")
        free.append("mok_fixed_us")
        knob_values = lambda k: {(r.get("config") or {}).get(k) for r in mok} - {None}  # noqa: E731
        if len(knob_values("minibatch")) > 1:
            free.append("minibatch_overhead_us")
        if len(knob_values("comm_sms")) > 1:
            # refitted even after micro-copy: a stand-alone gather owns the whole GPU, while in
            # the megakernel the comm SMs copy beside compute SMs that share HBM and L2
            free.append("copy_gbps_per_sm")
            if any(r["source"] == "measured" for r in mok):
                # and how much slower they copy while GEMMs run beside them
                # (analytic.copy_beside_gemm): seen where the copy nears the GEMMs' length
                free.append("copy_slowdown_beside_gemm")
            loops = {record_copy_loop(r) for r in mok if r["source"] == "measured"
                     and r["pass"] == "fwd"}
            if "serial" in loops and len(loops) > 1:
                # records of the oldest copy loop beside a newer one: what its index loads cost
                # (analytic.copy_load; copy_gbps_per_sm is the "ahead" loop's rate)
                free.append("serial_copy_scale")
            # pipe_copy_scale stays at its measured A/B value: freed beside copy_gbps_per_sm
            # the fit traded one for the other (1.01 at 26.9 GB/s a SM) and read today's
            # held-out runs worse (docs/calibration.md "Session 41")
        modes = knob_values("dispatch") | knob_values("combine")
        if "push" in modes and "pull" in modes and "push_copy_scale" in BOUNDS:
            # across GPUs a pushing SM writes over the fabric (push_copy_scale); one GPU's
            # emulated push copies the same rows as a pull, but each lane scans every chunk of a
            # minibatch for its peer's rows (push_scan_us, analytic.push_scan_chunks). Our
            # kernel's lanes scan across GPUs too, but published push kernels need not: its
            # real 2-GPU fit frees push_scan_us itself (calibration/defaults.py H200X2_MOK_FREE)
            emulated = [r for r in mok if r.get("emulated_peers")]
            if len(emulated) < len(mok):
                free.append("push_copy_scale")
            if emulated and any((r.get("config") or {}).get("dispatch") == "push" for r in emulated):
                free += ["push_scan_us", "push_scan_step_us"]
            # and a push pass's own time beyond its copies (analytic.push_pass), told by the
            # forward passes of both dispatches
            if {r["config"].get("dispatch") for r in mok if r.get("pass", "fwd") == "fwd"
                    and isinstance(r.get("config"), dict)} >= {"push", "pull"}:
                free.append("push_pass_us")
        if len(knob_values("comm_sms")) > 1:
            # how the compute scales with the SMs left to it is only seen when the comm SMs
            # vary. comm_join_share stays at the kernel's design value (priors: every comm
            # program joins): freed, h200-1 and h200-hgx8 fitted 0.998 and 1.000, and h100-1's
            # 0.914 read some passes' GEMMs on a fractional SM count across a step of the phase
            # mechanism's waves (docs/calibration.md "Session 73")
            free.append("sm_scaling")
        rings = {(c.get("macrobatch"), c.get("minibatch")) for c in (r.get("config") or {} for r in mok)}
        if any(m and b and m < 2 * b for m, b in rings):
            free.append("ring_refill_overlap")
        bwd = [r for r in mok if r["pass"] == "bwd"]
        if any(r["source"] == "published" for r in bwd):
            free.append("wgrad_bytes_per_weight")
        elif bwd:  # our backward megakernel's runs: its tile terms (calibration/passes.py)
            free += ["bwd_gemm_eff_scale", "wgrad_tile_us"]
        if any(r["precision"] == "fp8" for r in mok):
            free.append("fp8_gemm_eff")
    systems = {r["system"] for r in records}
    if "nccl-torch" in systems:  # the link share binds with many peers, a peer's channels with
        free += ["host_launch_scale", "nccl_eff", "nccl_peer_gbps"]  # few (nccl_peers_cap)
    return free


def _hardware_of(records: list[dict], wanted: str | None) -> tuple[str, list[dict]]:
    names = sorted({r["hardware"]["preset"] for r in records})
    if not names:
        raise MokInputError("the run-record files hold no records to fit")
    if wanted is None:
        if len(names) > 1:
            raise MokInputError(f"the records span hardware {names}; pass --hardware NAME to fit "
                                f"one of them (a parameters file is for one hardware)")
        return names[0], records
    kept = [r for r in records if r["hardware"]["preset"] == wanted]
    if not kept:
        raise MokInputError(f"--hardware {wanted!r}: no records of it; the records have {names}")
    return wanted, kept


def tuner_knobs(records: list[dict]) -> int:
    """How many MoK records leave knobs to the tuner (published rows that name none: predicted
    at its choice); a measured MoK record that leaves one open is refused with its file and
    line, as a run is scored at the knobs it ran, never at the tuner's."""
    n = 0
    for r in records:
        cfg = r.get("config") or {}
        missing = [f"config.{k}" for k in KNOBS if k not in cfg]
        if r["system"] != "mok" or not missing:
            continue
        if r["source"] == "measured":
            raise MokInputError(f"{record_where(r)}: a measured MoK run without "
                                f"{', '.join(missing)}: it would be scored at the tuner's knobs, "
                                f"not the ones it ran; add the knobs it ran")
        n += 1
    return n


def _check_engine(engine: str) -> None:
    if engine not in ENGINES:
        raise MokInputError(f"--engine {engine!r} must be one of {ENGINES}")
    if engine == "sim":
        try:
            import mok_model.sim  # noqa: F401
        except ImportError:
            raise MokInputError("--engine sim: the simulator (mok_model/sim) is not available "
                                "in this checkout; use --engine analytic") from None


def _summary(v) -> dict:
    return {"n": v.n, "mape": v.mape, "max_ape": v.max_ape, "spearman": v.spearman,
            "spearman_groups": v.groups}


def _fmt(name: str, v) -> str:
    rho = ("n/a (no workload with >= 3 configurations)" if v.spearman is None
           else f"{v.spearman:.3f} over {v.groups} workload(s)")
    return (f"{name}: n={v.n}  MAPE {100 * v.mape:.2f}%  max APE {100 * v.max_ape:.2f}%  "
            f"Spearman {rho}")


def base_note(path: str) -> str:
    """The first sentence of a parameters file's notes (what a fit from it started from)."""
    note = str(json.loads(Path(path).read_text()).get("notes", "")).strip()
    return note.split(". ")[0].rstrip(".") or "none"


def run_calibrate(a: argparse.Namespace) -> dict:
    """Fit and write the parameters file; return what was done (the --json document)."""
    _check_engine(a.engine)
    # --base may be --out (a refit in place: calibration/defaults.py); the others are read later
    check_output_file(a.out, "--out", ".json", replaces=(PARAMS_SCHEMA,),
                      inputs=[("RUN_FILES", r) for r in a.runs] + [("--gemm-table", a.gemm_table)])
    check_beside_output(fit_record_path(a.out), a.out, "--out", "fit record")   # fit/NAME
    if a.holdout is not None and a.holdout_by is None:
        raise MokInputError("--holdout VALUE needs --holdout-by KEY")
    if a.holdout_by is not None:
        check_key(a.holdout_by)
    param_names(a.free, "--free")
    for flag, value in (("--hardware", a.hardware), ("--gemm-table", a.gemm_table)):
        required_text(value, flag, "preset name" if flag == "--hardware" else "file path")
    base_file = params_file(a.base, "--base") if a.base is not None else None
    if base_file is not None and not base_file.hardware.strip():
        raise MokInputError(f"--base {a.base!r}: hardware={base_file.hardware!r} names no hardware; a "
                            f"parameters file to start from names the preset it was fitted for "
                            f"(or leave --base out: the priors of the records' hardware)")
    band = a.band if a.band is not None else ("bootstrap" if a.engine == "analytic" else "linear")
    if band not in BANDS:
        raise MokInputError(f"--band {band!r} must be one of {', '.join(BANDS)}")
    for flag, value in (("--band-samples", a.band_samples), ("--band-seed", a.band_seed)):
        if value is not None and not BANDS[band]:
            raise MokInputError(f"{flag} {value}: only applies with a sampled band (--band "
                                f"bootstrap or linear), not --band {band}")
    a.band_samples = BAND_SAMPLES if a.band_samples is None else a.band_samples
    a.band_seed = BAND_SEED if a.band_seed is None else a.band_seed
    # one canonical order (the records' ids), so the fit, its --thin, its bootstrap's workloads
    # and the micro records' ties do not follow the order the files (or their lines) come in: a
    # least-squares fit along a flat valley (copy_gbps_per_sm against copy_slowdown_beside_gemm)
    # stopped at another point for another row order
    records = in_id_order(read_records(a.runs))
    hardware, records = _hardware_of(records, a.hardware)
    out = Path(a.out).resolve()
    if out.parent == PARAMS_DIR.resolve() and out.stem != hardware:
        raise MokInputError(f"--out {a.out!r} is the default parameters file of {out.stem}, and "
                            f"these records are {hardware}'s: name {hardware}.json or a file "
                            f"outside {PARAMS_DIR.name}/")
    layer, notes = model_records(records)
    tuner_knobs(layer)
    base = base_file if base_file is not None else priors_for(hardware)
    if base_file is not None and base.hardware != hardware:
        raise MokInputError(f"--base {a.base!r} was fitted for hardware {base.hardware!r}, not "
                            f"{hardware!r} (the records' hardware); start from a file of "
                            f"{hardware!r} or from its priors (no --base)")
    table = read_table(a.gemm_table) if a.gemm_table is not None else base.gemm_table
    if table is not None and table.hardware != hardware:
        raise MokInputError(f"--gemm-table {table.path!r} was measured on {table.hardware!r}, "
                            f"not {hardware!r}")
    base = Params(base.values, hardware, None, [], dict(base.sources)).with_table(table)
    if table is not None:
        notes.append(f"GEMM efficiency from the measured table {table.path} ({len(table.points)} "
                     f"points from {', '.join(table.records)}, {table.level}): "
                     + ("gemm_eff not used by the megakernel's GEMMs" if replaces_gemm_eff(table)
                        else "gemm_eff times the table's shape factor"))
    micro = fit_micro(records, base)
    notes += micro.notes
    if not layer:
        raise MokInputError("no MoE layer records (system mok or a modelled baseline) to fit")
    split_doc = None
    train, held = layer, []
    cv = None
    if a.holdout_by and a.holdout == "all":
        with busy(f"cross-validating by {a.holdout_by} ({a.engine})", True):
            cv = cross_validate(layer, a.holdout_by, micro.params, a.free, set(micro.fitted), a.engine)
    elif a.holdout_by:
        train, held, value = split(layer, a.holdout_by, a.holdout)
        split_doc = {"by": a.holdout_by, "heldout": value, "train_n": len(train),
                     "heldout_n": len(held), "heldout_ids": [r["id"] for r in held]}
    if a.thin < 1:
        raise MokInputError(f"--thin {a.thin} must be >= 1")
    train = train[::a.thin]
    if split_doc:
        split_doc.update(train_n=len(train), thin=a.thin)
    free = a.free.split(",") if a.free else default_free(train, set(micro.fitted))
    if replaces_gemm_eff(table) and not a.free:  # the table replaces gemm_eff
        free = [f for f in free if f != "gemm_eff"]
    if 0 < len(train) <= len(free):
        warn(f"fitting {len(free)} parameters {free} to {len(train)} layer record(s): the fit is "
             f"underdetermined and its training error says nothing; add records or pass fewer "
             f"--free parameters")
        notes.append(f"underdetermined: {len(free)} parameters fitted to {len(train)} records")
    what = f", then {a.band_samples} {band} samples of them" if BANDS[band] else ""
    with busy(f"fitting {len(free)} parameters to {len(train)} records ({a.engine}){what}",
              a.engine == "sim" or len(train) > 200):
        result = fit(train, micro.params, free, a.engine, band=band, band_samples=a.band_samples,
                     band_seed=a.band_seed)
    notes += result.notes
    runs = [str(Path(p)) for p in a.runs]
    sources = dict(micro.params.sources)
    for k, how in micro.fitted.items():
        sources[k] = f"stage 1, fitted to microbenchmark records ({how}) in {runs}"
    where = f"held out {a.holdout_by}={split_doc['heldout']}" if split_doc else "no hold-out"
    for k in free:
        sources[k] = (f"stage 2, fitted to {len(train)} layer records in {runs} ({where}); "
                      f"bounded least squares on relative error")
    params = Params(result.params.values, hardware, None, runs, sources,
                    result.uncertainty).with_table(table)
    unc = result.uncertainty
    train_v = evaluate(train, [r["measured_ms"] for r in result.residuals],
                       [r["predicted_ms"] for r in result.residuals])
    with busy(f"predicting {len(held)} held-out records ({a.engine})", bool(held)):
        held_v = validate(held, params, a.engine) if held else None
    doc = {"out": a.out, "hardware": hardware, "engine": a.engine, "fitted_on": runs,
           "stages": {"micro": {"fitted": micro.fitted, "n": len(micro.residuals),
                                "values": {k: micro.params[k] for k in micro.fitted},
                                "residuals": micro.residuals},
                      "layer": {"free": free, "values": {k: params[k] for k in free},
                                "n": len(train)}},
           "split": split_doc, "train": _summary(train_v),
           "heldout": _summary(held_v) if held_v else None,
           "cross_validation": {k: v for k, v in cv.items() if k != "rows"} if cv else None,
           "uncertainty": {k: v for k, v in unc.items() if k != "samples"} if unc else None,
           "notes": notes}
    extra = {"split": split_doc, "engine": a.engine, "stages": doc["stages"],
             "residuals": result.residuals, "train_metrics": doc["train"],
             "heldout_metrics": doc["heldout"],
             "heldout_residuals": held_v.rows if held_v else [], "cross_validation": cv}
    start = (f"{a.base} (--base; its notes: {base_note(a.base)})" if a.base is not None
             else f"{hardware} priors (calibration/priors.py)")
    write_params(a.out, params,
                 f"Fitted by `mok calibrate` from {start}: "
                 f"stage 1 {sorted(micro.fitted) or 'skipped'}, stage 2 {free}; {where}. "
                 + " ".join(notes), extra)
    if not a.json:
        for n in notes:
            print(f"note: {n}")
        if micro.fitted:
            print("stage 1 (microbenchmarks): " + ", ".join(
                f"{k}={params[k]:.4g}" for k in sorted(micro.fitted)))
        print(f"stage 2 ({len(train)} layer records, {where}): " + ", ".join(
            f"{k}={params[k]:.4g}" for k in free))
        if unc:
            print(f"uncertainty ({unc['method']}, {unc['n']} samples over {unc['groups']} "
                  f"workloads, seed {unc['seed']}; 5th-95th percentile): " + ", ".join(
                      f"{k} {v['p05']:.4g}..{v['p95']:.4g}" for k, v in unc["summary"].items()))
        else:
            print("uncertainty: none estimated (predictions with this file have no band)")
        print(_fmt("fit (train)", train_v))
        if held_v:
            print(_fmt(f"held out ({a.holdout_by}={split_doc['heldout']})", held_v))
        if cv:
            for f in cv["folds"]:
                print(_fmt(f"  fold: held out {a.holdout_by}={f['heldout']}", _NS(**f)))
            print(_fmt(f"cross-validation by {a.holdout_by} (pooled held-out predictions)",
                       _NS(**cv["pooled"])))
            print("the parameters file holds the fit to all records; the folds only judge it")
        print(f"wrote {a.out}")
    return doc


class _NS:
    def __init__(self, **kw) -> None:
        self.__dict__.update(kw)
        self.groups = kw.get("spearman_groups", 0)


def cross_validate(layer: list[dict], by: str, base: Params, free_arg: str | None,
                   micro_fitted: set[str], engine: str) -> dict:
    """Hold out each group of `by` in turn: fit on the rest, predict the group; pooled metrics."""
    folds, held_all, pred_all = [], [], []
    for value in group_values(layer, by):
        train, held, _ = split(layer, by, value)
        free = free_arg.split(",") if free_arg else [
            f for f in default_free(train, micro_fitted)
            if not (f == "gemm_eff" and replaces_gemm_eff(base.gemm_table))]
        res = fit(train, base, free, engine)
        v = validate(held, res.params, engine)
        folds.append({"heldout": value, **_summary(v), "free": free,
                      "values": {k: res.params[k] for k in free}})
        held_all += held
        pred_all += [r["predicted_ms"] for r in v.rows]
    pooled = evaluate(held_all, [r["latency_ms"]["median"] for r in held_all], pred_all)
    return {"by": by, "folds": folds, "pooled": _summary(pooled), "rows": pooled.rows}


def calibrate_parser() -> argparse.ArgumentParser:
    p = MokParser(prog="mok calibrate", description="Fit a parameters file to run records.")
    p.add_argument("runs", nargs="+", metavar="RUN_FILES", help="mok-run/1 JSONL files")
    p.add_argument("--out", required=True, help="parameters file to write")
    p.add_argument("--holdout-by", default=None,
                   help="hold out a whole group: tokens, model, ep, pass, precision, routing, "
                        "system, or a knob name")
    p.add_argument("--holdout", default=None,
                   help="the group value to hold out (default: the largest / last); 'all': "
                        "each group in turn (cross-validation; the file holds the fit to all)")
    p.add_argument("--hardware", default=None, help="fit this hardware's records only")
    p.add_argument("--engine", default="analytic", help=f"one of {ENGINES}")
    p.add_argument("--free", default=None, help="comma list of stage-2 parameters to fit")
    p.add_argument("--base", default=None, help="start from this parameters file, not priors")
    p.add_argument("--gemm-table", default=None,
                   help="GEMM efficiency table (python -m calibration.gemm_table) for the "
                        "megakernel's GEMMs in place of gemm_eff; the written file names it")
    p.add_argument("--thin", type=int_at_least(1), default=1, help="fit on every K-th training record (in "
                   "record-id order; for the slow sim engine); the held-out group is kept whole")
    p.add_argument("--band", default=None,
                   help="the fitted parameters' uncertainty, stored in the file for prediction "
                        "bands: bootstrap (refit to resampled workloads; default with the analytic "
                        "engine), linear (the same, linearized at the optimum; default with sim), "
                        "none")
    p.add_argument("--band-samples", type=int_at_least(2, MAX_BAND_SAMPLES), default=None,
                   help=f"parameter vectors to sample (default {BAND_SAMPLES}; at most "
                        f"{MAX_BAND_SAMPLES}: each is a refit)")
    p.add_argument("--band-seed", type=int_at_least(0, MAX_SEED), default=None,
                   help=f"seed of the workload resampling (default {BAND_SEED})")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    return p


def validate_parser() -> argparse.ArgumentParser:
    p = MokParser(prog="mok validate", description="Compare predictions with run records.")
    p.add_argument("runs", nargs="+", metavar="RUN_FILES", help="mok-run/1 JSONL files")
    p.add_argument("--params", required=True, help="parameters file")
    p.add_argument("--engine", default="analytic", help=f"one of {ENGINES}")
    p.add_argument("--plot", default=None, help="write predicted vs measured (PNG)")
    p.add_argument("--color-by", default=None,
                   help="knob or field colouring the --plot (default minibatch)")
    p.add_argument("--bands", action="store_true",
                   help="draw each point's 90%% band on the --plot (the fit's parameter "
                        "uncertainty, as predict prints it; analytic engine) and add it to --json")
    p.add_argument("--thin", type=int_at_least(1), default=1, help="every K-th record only (in record-id "
                   "order)")
    p.add_argument("--heldout-only", action="store_true",
                   help="only the records the parameters file's split held out")
    p.add_argument("--allow-params-mismatch", action="store_true",
                   help="use a parameters file fitted for other hardware")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    return p


def slowed_note(rows: list[dict], held: list[bool]) -> str:
    """How many records were timed with the SMs held below their clock (records.slowed), and the
    mean signed error on them and on the others: a power- or heat-capped run is slower than the
    parameters, fitted on runs at full clock, say."""
    def signed(keep: bool) -> str:
        errs = [r["predicted_ms"] / r["measured_ms"] - 1 for r, h in zip(rows, held) if h == keep]
        return f"{100 * sum(errs) / len(errs):+.1f}%" if errs else "n/a"
    return (f"{sum(held)} of {len(rows)} records were timed with the SMs held below their clock "
            f"({SLOWED_WHY}): mean signed error {signed(True)} "
            f"on them, {signed(False)} on the others")


def run_validate(a: argparse.Namespace) -> dict:
    """Predict every layer record with the parameters file; return the --json document."""
    _check_engine(a.engine)
    if a.plot is not None:
        check_output_file(a.plot, "--plot", ".png", replaces=("png",),
                          inputs=[("RUN_FILES", r) for r in a.runs] + [("--params", a.params)])
    records = read_records(a.runs)
    params = read_params(a.params)
    known = ("model", "tokens", "ep", "pass", "precision", "system", "source", "date") + KNOBS
    if a.color_by is not None and a.color_by not in known:
        raise MokInputError(f"--color-by {a.color_by!r} must be one of {', '.join(known)}")
    if a.color_by is not None and a.plot is None:
        raise MokInputError(f"--color-by {a.color_by} colours the plot; add --plot FILE.png")
    if a.bands:
        from mok_model.band import no_band
        if a.plot is None:
            raise MokInputError("--bands draws on the plot; add --plot FILE.png")
        why = no_band(params, a.engine)
        if why:
            raise MokInputError(f"--bands with {a.params} ({a.engine}): {why}")
    records, skipped = model_records(records)
    if a.heldout_only:
        split_doc = read_fit_record(a.params).get("split")
        if not isinstance(split_doc, dict) or not isinstance(split_doc.get("heldout_ids"), list):
            raise MokInputError(f"--heldout-only: {a.params} was fitted without a hold-out split")
        ids = set(map(str, split_doc["heldout_ids"]))
        records = [r for r in records if r["id"] in ids]
    if a.thin < 1:
        raise MokInputError(f"--thin {a.thin} must be >= 1")
    if a.thin > 1:  # every K-th record in id order, whatever order the files come in
        keep = {r["id"] for r in in_id_order(records)[::a.thin]}
        records = [r for r in records if r["id"] in keep]
    if not records:
        why = "; ".join(skipped) or ("micro-* and kernel-only systems such as torch-grouped are "
                                     "not predicted")
        raise MokInputError(f"no MoE layer records to validate ({why})")
    tuned = tuner_knobs(records)        # refuses a measured run missing a knob; counts the rest
    other = sorted({r["hardware"]["preset"] for r in records} - {params.hardware})
    if other and not a.allow_params_mismatch:
        first = next(r for r in records if r["hardware"]["preset"] in other)
        raise MokInputError(
            f"--params {a.params!r} was fitted for hardware {params.hardware!r}, but "
            f"{first['_file']}:{first['_line']} is a run on {first['hardware']['preset']!r}; pass "
            f"--allow-params-mismatch to use it anyway")
    with busy(f"predicting {len(records)} records ({a.engine})", a.engine == "sim"):
        v = validate(records, params, a.engine)
    for note in skipped:
        print(f"mok validate: {note}", file=sys.stderr)
    bands = None
    if a.bands:
        with busy(f"bands of {len(records)} records", True):
            bands = record_bands(records, params)
        for row, b in zip(v.rows, bands):
            row["band_ms"] = None if b is None else {"lo": b[0], "hi": b[1]}
    if a.plot:
        flush_warnings()    # every check passed: "will be replaced" is said before the write
        plot(records, v, a.plot, a.color_by or "minibatch", bands=bands)
    doc = v.as_json()
    doc["tuner_knobs"] = tuned                          # predicted at the tuner's knobs
    held = [slowed(r) for r in records]
    doc["slowed"] = sum(held)            # records timed with the SMs held below their clock
    if not a.json:
        for row in v.rows:
            print(f"{row['id']:<56} measured {row['measured_ms']:9.4f} ms  predicted "
                  f"{row['predicted_ms']:9.4f} ms  APE {100 * row['ape']:6.2f}%")
        print(_fmt(f"validation with {a.params} ({a.engine})", v))
        if tuned:
            print(f"note: {tuned} MoK record(s) name no knobs (published rows): predicted at "
                  f"the tuner's choice under {a.params}")
        if any(held):
            print(f"note: {slowed_note(v.rows, held)}")
        print("mean signed error / MAPE by value (bias shows where the model's form misses):")
        for key in ("model", "tokens", "system") + KNOBS:
            by = error_by(records, v, key)
            if len(by) > 1:
                print(f"  {key:<10} " + "  ".join(f"{k}: {100 * b:+.1f}%/{100 * m:.1f}% (n={n})"
                                                  for k, (b, m, n) in by.items()))
        if a.plot:
            print(f"wrote {a.plot}")
    return doc


def _main(parser_fn, run_fn, argv: list[str]) -> int:
    try:
        a = parser_fn().parse_args(argv)
        doc = run_fn(a)
        if a.json:
            print(json.dumps(doc, indent=1))
        return 0
    except MokInputError as exc:
        print(f"mok: error: {exc}", file=sys.stderr)
        return 2
    except SystemExit as exc:  # --help
        return int(exc.code or 0)


def calibrate_cli(argv: list[str]) -> int:
    """Entry point of `mok calibrate`; returns the exit status."""
    return _main(calibrate_parser, run_calibrate, argv)


def validate_cli(argv: list[str]) -> int:
    """Entry point of `mok validate`; returns the exit status."""
    return _main(validate_parser, run_validate, argv)
