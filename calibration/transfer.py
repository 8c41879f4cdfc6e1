"""Parameters moved by stated ratios: H200 -> GB300 (the published GB300 NVL72 rows predicted
with no GB300 fit), h200-1 -> h100-1 (then its GEMM lookup partly fitted to the H100's GEMM
phases and its stage-2 terms to the H100's pass runs), and one emulating GPU -> a real fabric.

    python -m calibration.transfer [--terms] [--json]
    python -m calibration.transfer --write-hopper | --write-fabric OUT.json

GB300's parameters are built from three sources only: the design facts of the published kernel
on Blackwell (calibration/priors.py, BLACKWELL: how its minibatches, waves and comm SMs work);
every efficiency or overhead that was fitted or measured on real H200s (mok_model/params/
h200-hgx8.json), moved by the ratios in TRANSFER below; and the GEMM efficiency by shape of the
library's grouped GEMM measured on one H200 (LIBRARY_TABLE, below). Each ratio is of a quantity
that is a fraction of a spec (moved as the same fraction: the spec itself comes from each
hardware preset, with its source, and `--json` lists both presets' figures) or a time or a rate
that the spec does not set (moved as measured, ratio 1, with the reason). The published rows
(calibration/runs/published/gb300_table1.jsonl) are then predicted at the tuner's knobs (the
table publishes none) and, for the MoK rows, also at the published default knobs
(mok_model.scenario.default_config; `predicted_default_ms`). Nothing here reads a GB300 fit,
except `--terms`, which prints the shipped GB300 fit's terms beside the transferred ones to show
where they differ (a diagnosis; no prediction uses it).

**Hopper to Hopper: h200-1 -> h100-1** (`--write-hopper`). The H100 is the H200's die (the same
SMs, clocks and tensor rates) with HBM3 at 3.35 TB/s instead of HBM3e at 4.8, and our kernels
run unchanged on it. So every h200-1 value moves as it is (HOPPER_WHY says why for each kind),
its fit's uncertainty samples with them, and the GEMM table of our kernel's own GEMM phases
transfers: its points and their residuals stay H200's (mok_model/gemm_table.py, "A table
transferred"), looked up on h200-1's phase mechanism with two of its four constants, the weight
stream and the tensor efficiency, fitted to our kernel's GEMM phases alone measured on an H100
(HOPPER_PHASES, HOPPER_FREE), from h200-1's with the weight stream scaled by the two presets'
HBM bandwidths. The spec differences come from the presets (hbm_tbps, and h100-1's local-HBM
copy rate, h200-1's probe moved as the same fraction of HBM). Then, since session 59, the
transferred file is the start of a fit: its stage-2 terms (`mok calibrate --base`, the default
free set) fitted to the H100's own BF16 forward pass runs (HOPPER_PASS_RUNS; fit_hopper_passes),
which read two blind seeds as well or better than the transfer alone (docs/calibration.md
"Session 59"); the backward and FP8 terms stay h200-1's.

**Emulated to real fabric: h200-1 -> h200-hgx8 / h100-1 -> h100-hgx8** (`--write-fabric OUT`,
and h100-hgx8 with `--write-hopper`; fabric_params). A single-GPU fit (our kernel, its peers
emulated in local HBM) with the fabric the NVLink microbenchmarks measured on two real H200s, the
comm program's in-kernel copy rate moved from its measured stand-alone NVLink rate by the
emulating H200's own in-kernel / stand-alone ratio; no term fitted to a multi-GPU layer run.
h100-hgx8 also takes the real 2-H200 box's host, NCCL and library-GEMM terms (HOST_TERMS), which
its baselines run on. docs/calibration.md "Session 56" scores it on the real 2-GPU runs.

**GEMM efficiency.** The H200 fit's gemm_eff (0.53) describes our Triton megakernel's tiles
(tl.dot, a dynamic work counter, 128-192 experts per GPU at EP 2): a property of that
implementation, not of the H200. The published kernel is another implementation, a hand-written
Blackwell GEMM. The H200 evidence for what a tuned GEMM reaches at the published rows' own
shapes (the same hidden, expert width, local experts and rows per expert: kimi-k2 and glm-5 at
EP 16 and 1,024 / 2,048 tokens are among the points) is the library's grouped GEMM
(torch._grouped_mm) timed alone on one H200: the `gemm-only` records, a table of eff = tile-
quantized FLOPs at peak / measured (python -m calibration.gemm_table ... --relative, file
LIBRARY_TABLE). It transfers as the same fraction of each GPU's dense BF16 peak (preset: 989 ->
2,500 TF/s), at the scenario's shape: the published kernel's GEMMs are taken to reach what the
vendor's grouped GEMM reaches on Hopper (an assumption, stated; no Blackwell GEMM of these
shapes is measured here). The table measured forward GEMMs; the backward's data-gradient GEMMs
have the forward's shapes and its weight-gradient GEMMs the same FLOPs, so each forward point is
also used for the backward (marked `derived`), times bwd_gemm_eff_scale (the Blackwell prior;
the H200 fit's 0.60 is our Triton backward kernel's and is not moved). gemm_eff (the H200 fit's)
stays for what the table does not cover (FP8, MXFP8).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from mok_model.cli import doc_parser, run_tool
from mok_model.errors import MokInputError
from mok_model.gemm_table import GemmTable, read_table
from mok_model.params import PARAMS_DIR, Params, read_params
from mok_model.predict import predict
from mok_model.presets import load_hardware
from mok_model.records import read_records, record_files, record_scenario
from mok_model.scenario import default_config

from .defaults import H200X2, RUNS, beside_held, transferred
from .fit import resolve_configs
from .priors import BLACKWELL, prior_params
from .validate import validate

ROOT = Path(__file__).resolve().parents[1]
H200 = PARAMS_DIR / "h200-hgx8.json"
# python -m calibration.gemm_table <the h200-1 files with gemm-only records> --hardware h200-1
#     --relative --out mok_model/params/gemm/h200-1-library.json   (the file names its records)
LIBRARY_TABLE = PARAMS_DIR / "gemm" / "h200-1-library.json"
SOURCE, TARGET = "h200-hgx8", "gb300-nvl72"

# parameter -> (ratio GB300 / H200, why, the preset field whose spec the value is a fraction of,
# or None where no spec sets it). A fraction of a spec moves unchanged (ratio 1): the spec itself
# (TFLOP/s, TB/s, link GB/s) comes from each hardware preset, with its source.
TRANSFER = {
    "gemm_eff": (1.0, "the same fraction of the dense BF16 peak; used only where the library "
                      "table does not cover the pass and precision (FP8, MXFP8)", "bf16_tflops"),
    "hbm_eff": (1.0, "the same fraction of HBM bandwidth", "hbm_tbps"),
    "link_eff": (1.0, "the same fraction of the NVLink bandwidth per direction", "link_gbps"),
    "copy_gbps_per_sm": (1.0, "a copy SM is limited by its bytes in flight over the latency, "
                              "not by the link: the same rate per SM (measured 25 GB/s, 2 H200)",
                         None),
    "push_copy_scale": (1.0, "as measured on H200 (writes no slower than reads)", None),
    "signal_remote_us": (1.0, "one NVLink round trip; the NVL72 switch hop is the preset's "
                              "hop latency, added by the model", None),
    "push_signal_per_peer_us": (1.0, "per peer released, as measured on H200", None),
    "sm_scaling": (1.0, "the GEMM rate's growth with SMs, as fitted on H200", None),
    "minibatch_overhead_us": (1.0, "per-minibatch signalling, as fitted on H200", None),
    "mok_fixed_us": (1.0, "residual per pass, as fitted on H200", None),
    "nccl_eff": (1.0, "the same fraction of the link for NCCL all-to-all", "link_gbps"),
    "nccl_peer_gbps": (1.0, "NCCL's channels to one peer move what their SMs copy, not what the "
                            "link carries (as copy_gbps_per_sm): as measured", None),
    "host_launch_scale": (1.0, "the host's launch cost relative to the preset's launch_us, as "
                               "fitted on the H200 host (Grace is slower per the publication, "
                               "which gives no ratio: 1 understates it)", "launch_us"),
    "mok_exposed_launches": (1.0, "the MoK pass's exposed host launches as fitted on the H200 "
                                  "MoK runs, jointly with host_launch_scale (their product is "
                                  "the pass's host time there); moved with it, not reset to the "
                                  "design's 1", "launch_us"),
}


def library_table(path: Path = LIBRARY_TABLE) -> GemmTable:
    """The library grouped GEMM's efficiencies by shape (H200, forward), read as absolute
    fractions of peak, each forward point also standing for the backward (module docstring)."""
    t = read_table(path)
    fwd = [p for p in t.points if p.get("pass", "fwd") == "fwd"]
    bwd = [{**p, "pass": "bwd", "derived": "the forward point at the same shape (data-gradient "
            "GEMMs have the forward's shapes, weight gradients its FLOPs)"} for p in fwd]
    notes = (f"{t.notes}; read as the published kernel's absolute GEMM efficiency on "
             f"{TARGET} (calibration/transfer.py), forward points also for the backward")
    return GemmTable(t.hardware, tuple(fwd + bwd), t.records, str(path), notes, "absolute")


def transferred_params():
    """GB300 parameters: BLACKWELL design priors, efficiencies and overheads from the H200 fit
    by TRANSFER, GEMM efficiency by shape from the H200 library table."""
    h200 = read_params(H200)
    base = prior_params(TARGET, BLACKWELL)
    values, sources = dict(base.values), dict(base.sources)
    for name, (ratio, why, _) in TRANSFER.items():
        values[name] = h200[name] * ratio
        sources[name] = f"transferred from {SOURCE} ({h200[name]:.4g}) x {ratio:g}: {why}"
    table = library_table()
    fitted_on = [str(H200.relative_to(ROOT)), str(LIBRARY_TABLE.relative_to(ROOT))]
    table = GemmTable(table.hardware, table.points, table.records, fitted_on[1], table.notes,
                      table.level)
    return Params(values, TARGET, None, fitted_on, sources).with_table(table)


HOPPER_SOURCE, HOPPER_TARGET = "h200-1", "h100-1"
HOPPER_WHY = ("the H100 is the H200's die (same SMs, clocks, tensor rates; HBM3 3.35 TB/s against "
              "4.8): a fraction of a spec moves as the same fraction (the spec is the preset's), "
              "a design value or an SM-side time or rate as it is, a host term with the same "
              "x86 host assumed")
# the H100's own GEMM phases alone (system mok-gemm), the H100 records the GEMM table is fitted
# on: two of the GEMM table's mechanism constants (hopper_params), the weight stream (HBM3 is not
# HBM3e) and the tensor efficiency; the per-item and per-launch times stay h200-1's (same SMs and
# clocks). Fitting all four read the pass files no better on average and left-out shapes' phases
# worse (mok_kernels/logs_s57/h100_mech_variants.txt).
HOPPER_PHASES = ("calibration/runs/h100/gemm_phases_drawn21.jsonl",)
HOPPER_FREE = ("hbm_gbps", "tensor_eff")
# the H100's own BF16 forward pass runs that h100-1's stage-2 terms are then fitted on (`mok
# calibrate --base`, its default free set): seeds 8-9 and 21-24 and the push grids, 960 MoK
# records. Registered for seed 25 before its run (7.4 / 6.5 % MAPE against the transfer's 8.3 /
# 7.6 %) and seed 26 (5.8 / 5.5 % against 5.8 / 5.7 %): docs/calibration.md "Session 59". Seeds
# 25 and 26 and the FP8 runs stay out, h100-1's held-out set (calibration/heldout_errors.py).
HOPPER_PASS_RUNS = tuple(f"calibration/runs/h100/{name}" for name in (
    "drawn8.jsonl.gz", "drawn9.jsonl.gz", "drawn21.jsonl.gz", "drawn21g.jsonl.gz",
    "drawn22.jsonl.gz", "drawn22_rerun.jsonl.gz", "drawn23.jsonl.gz", "drawn24.jsonl.gz",
    "push_lanes.jsonl.gz", "push_binds.jsonl"))


def hopper_table() -> Path:
    """Where h100-1's transferred GEMM table goes (write_hopper checks it before the fit)."""
    return PARAMS_DIR / "gemm" / f"{HOPPER_TARGET}.json"


def hopper_params() -> Params:
    """h100-1's parameters: h200-1's values and uncertainty samples as they are, the GEMM table
    transferred (its points and residuals) and looked up on a mechanism partly fitted to the
    H100's own GEMM phases (HOPPER_PHASES, HOPPER_FREE; module docstring)."""
    from mok_model.gemm_table import transferred_table

    from .gemm_table import fit_lookup

    src = read_params(PARAMS_DIR / f"{HOPPER_SOURCE}.json")
    ratio = load_hardware(HOPPER_TARGET).hbm_tbps / load_hardware(HOPPER_SOURCE).hbm_tbps
    sources = {k: f"transferred from {HOPPER_SOURCE} ({HOPPER_WHY}): {v}"
               for k, v in src.sources.items()}
    t = src.gemm_table
    path = hopper_table()
    moved = {**t.mechanism, "hbm_gbps": t.mechanism["hbm_gbps"] * ratio}
    mech, how = fit_lookup(t, HOPPER_TARGET, path, moved,
                           read_records([str(ROOT / f) for f in HOPPER_PHASES]), free=HOPPER_FREE)
    notes = (f"transferred from {Path(t.path).name} ({HOPPER_SOURCE}, measured): its points and "
             f"residuals, looked up on {HOPPER_TARGET}'s mechanism: "
             + ", ".join(f"{k} {mech[k]:.4g}" for k in HOPPER_FREE)
             + f" fitted to {how['n']} measured {HOPPER_TARGET} GEMM phases alone (mok-gemm records "
             f"in {', '.join(HOPPER_PHASES)}; calibration.gemm_table.fit_lookup), "
             + ", ".join(f"{k} {mech[k]:.4g}" for k in mech if k not in HOPPER_FREE)
             + f" as {HOPPER_SOURCE} measured (same SMs and clocks); the phases' MAPE "
             f"{100 * how['mape_after']:.1f}% ({HOPPER_SOURCE}'s mechanism with hbm_gbps x "
             f"{ratio:.4f}, the HBM ratio: {100 * how['mape_before']:.1f}%); "
             f"python -m calibration.transfer --write-hopper")
    table = transferred_table(t, HOPPER_TARGET, path, mech, notes)
    fitted_on = [str((PARAMS_DIR / f"{HOPPER_SOURCE}.json").relative_to(ROOT)), *HOPPER_PHASES]
    return Params(src.values, HOPPER_TARGET, None, fitted_on, sources,
                  transferred(src.uncertainty, HOPPER_SOURCE, [])).with_table(table)


# the single-GPU presets whose fit (or transfer) a real-GPU box takes, and that box's preset
FABRIC_TARGETS = {"h200-1": "h200-hgx8", "h100-1": "h100-hgx8"}
FABRIC_WHY = ("the same GPU and kernel as the emulating single GPU (its values and GEMM table as "
              "they are); what emulation cannot show, the fabric, as the NVLink microbenchmarks "
              "measured it")
# the real 2-H200 box's host, NCCL and library-GEMM terms (h200-hgx8's fit): what the baselines
# run on and the MoK pass's host launches; taken with `host` (the same x86 host and NCCL assumed)
HOST_TERMS = ("host_launch_scale", "mok_exposed_launches", "host_sync_us", "nccl_peer_gbps",
              "nccl_collective_us", "nccl_eff", "torch_gemm_eff", "torch_hbm_eff")


def fabric_params(source: str = "h200-1", host: bool = False) -> Params:
    """A real-GPU box's parameters with no fit to its MoK layer runs: `source`'s values and GEMM
    table (the same GPU and kernels, its peers emulated in local HBM), the fabric values that
    calibration.fit_fabric measures on two real H200s (copy rate per program, link efficiency,
    signal latency, per-peer push signalling; NVLink4 on either Hopper box), and the copy rate
    of a comm program *inside* the megakernel moved from its stand-alone NVLink rate by the
    emulating H200's own ratio of the two (h200-1's in-kernel rate, stage 2 of its fit, over its
    stand-alone micro-copy rate, stage 1): the kernel's comm program copies at the same fraction
    of what it copies alone, whether its rows come from local HBM or over NVLink. With `host`,
    the HOST_TERMS of the real 2-H200 fit too (the baselines' NCCL and library GEMM, and the
    host's launch cost)."""
    from .fit_fabric import fit_fabric

    if source not in FABRIC_TARGETS:
        raise MokInputError(f"source {source!r}: one of {', '.join(FABRIC_TARGETS)}")
    target, path = FABRIC_TARGETS[source], PARAMS_DIR / f"{source}.json"
    src, h200 = read_params(path), PARAMS_DIR / "h200-1.json"
    stages = json.loads((PARAMS_DIR / "fit" / h200.name).read_text(encoding="utf-8"))["stages"]
    inside, alone = read_params(h200)["copy_gbps_per_sm"], stages["micro"]["values"]["copy_gbps_per_sm"]
    sources = {k: f"transferred from {source} ({FABRIC_WHY}): {v}" for k, v in src.sources.items()}
    base = Params(src.values, target, None, [], sources).with_table(src.gemm_table)
    micro = read_records(record_files(H200X2, "nvlink_micro_*.jsonl"))
    fab = fit_fabric(micro, base, load_hardware(target))
    values, sources = dict(fab.params.values), dict(fab.params.sources)
    for name, f in fab.fitted.items():
        sources[name] = f"measured on two H200s ({f['how']}; {', '.join(f['files'])})"
    copy = fab.params["copy_gbps_per_sm"]
    values["copy_gbps_per_sm"] = copy * inside / alone
    sources["copy_gbps_per_sm"] += (
        f", x {inside / alone:.4f} = {copy * inside / alone:.2f} GB/s inside the megakernel: "
        f"h200-1's in-kernel rate {inside:.2f} over its stand-alone micro-copy rate {alone:.2f} "
        f"(stage 2 / stage 1 of its fit)")
    fitted_on = [str(path.relative_to(ROOT))] + sorted(
        {f for x in fab.fitted.values() for f in x["files"]})
    if host:
        box = read_params(H200)
        for name in HOST_TERMS:
            values[name] = box[name]
            sources[name] = f"the real 2-H200 box's fit ({SOURCE}, same x86 host and NCCL): {box.sources[name]}"
        fitted_on.append(str(H200.relative_to(ROOT)))
    drop = list(fab.fitted) + (list(HOST_TERMS) if host else [])
    return Params(values, target, None, fitted_on, sources,
                  transferred(src.uncertainty, source, drop)).with_table(src.gemm_table)


def write_fabric(out: str | Path) -> Path:
    """Write fabric_params() (h200-1 -> h200-hgx8, no host terms) to a new file `out` (checked
    as given, before anything is written: '' is empty, not '.'): registrations name the file, so
    it is written once."""
    from mok_model.fileio import check_output_file
    from mok_model.params import write_params

    if check_output_file(out, "--write-fabric", ".json").exists():
        raise MokInputError(f"--write-fabric {out} exists; it is written once (name a new file)")
    write_params(out, fabric_params(),
                 "Transferred from h200-1 with the fabric measured on two real H200s "
                 "(python -m calibration.transfer --write-fabric); no fit to multi-GPU layer runs.")
    return Path(out)


def write_hopper() -> list[Path]:
    """Write h100-1's parameters file and its transferred GEMM table (hopper_params), fit its
    stage-2 terms on the H100's pass runs (fit_hopper_passes), then write the HGX H100 box's:
    h100-1's with the measured fabric and the 2-H200 box's host terms (fabric_params)."""
    from mok_model.fileio import check_beside_output, check_output_file
    from mok_model.gemm_table import write_table
    from mok_model.params import fit_record_path, write_params

    table = hopper_table()
    out, box = PARAMS_DIR / f"{HOPPER_TARGET}.json", PARAMS_DIR / "h100-hgx8.json"
    # all, before the minutes of fitting and before any is written (a chmod a-w one was
    # replaced); fit_hopper_passes' calibrate also writes the fit record beside `out`
    for path in (out, table, box):
        check_output_file(path, "--write-hopper", ".json")
    check_beside_output(fit_record_path(out), out, "--write-hopper", "fit record")
    params = hopper_params()
    write_table(table, params.gemm_table)
    write_params(out, params, f"Transferred from {HOPPER_SOURCE} (same GPU die and kernels; "
                              f"python -m calibration.transfer --write-hopper); on an H100 the GEMM "
                              f"table's mechanism is fitted to the kernel's GEMM phases alone.")
    fit_hopper_passes(out, params)
    write_params(box, fabric_params(HOPPER_TARGET, host=True),
                 f"Transferred from {HOPPER_TARGET} (its stage-2 terms fitted to the H100's own "
                 f"pass runs) with the NVLink fabric measured on two real H200s and that box's "
                 f"host, NCCL and library-GEMM terms (python -m calibration.transfer "
                 f"--write-hopper); no multi-GPU H100 record behind it.")
    return [out, table, box]


def fit_hopper_passes(path: Path, moved: Params) -> None:
    """Refit the transferred h100-1 file at `path` (`moved`) in place: `mok calibrate --base` on
    HOPPER_PASS_RUNS (stage 2, its default free set, a bootstrap of as many samples as the
    transferred block holds), then the file's provenance put back: fitted_on names h200-1, the
    GEMM phases and the pass runs, and the uncertainty block keeps h200-1's transferred columns
    for the values this fit held (its other stage-2 terms, the backward and FP8 terms)."""
    from mok_model.params import read_fit_record, write_params

    from .cli import calibrate_cli

    rel = str(path.relative_to(ROOT))
    samples = ["--band-samples", str(moved.uncertainty["n"])] if moved.uncertainty else []
    here = os.getcwd()   # the paths are the repository's (the file's notes name them)
    os.chdir(ROOT)       # (contextlib.chdir is Python 3.11+; the package supports 3.10)
    try:
        rc = calibrate_cli([*HOPPER_PASS_RUNS, "--base", rel, "--out", rel,
                            "--hardware", HOPPER_TARGET, *samples])
    finally:
        os.chdir(here)
    if rc != 0:
        raise MokInputError(f"fitting {rel} on the H100 pass runs failed (the message above)")
    fitted, doc = read_params(path), json.loads(path.read_text(encoding="utf-8"))
    fitted_on = [str((PARAMS_DIR / f"{HOPPER_SOURCE}.json").relative_to(ROOT)), *HOPPER_PHASES,
                 *HOPPER_PASS_RUNS]
    unc = beside_held(fitted.uncertainty, moved.uncertainty, HOPPER_SOURCE)
    write_params(path, Params(fitted.values, HOPPER_TARGET, None, fitted_on, fitted.sources,
                              unc).with_table(fitted.gemm_table),
                 doc["notes"], read_fit_record(path))


def spec_ratios() -> dict:
    """{preset field: {h200, gb300, ratio, sources}} for the spec fields TRANSFER names."""
    src, dst = load_hardware(SOURCE), load_hardware(TARGET)
    out = {}
    for field in sorted({f for _, _, f in TRANSFER.values() if f}):
        a, b = getattr(src, field), getattr(dst, field)
        out[field] = {SOURCE: a, TARGET: b, "ratio": b / a,
                      "sources": {SOURCE: src.sources.get(field, ""),
                                  TARGET: dst.sources.get(field, "")}}
    return out


def score(params: Params, rows: list[dict]) -> dict:
    """Each system's rows predicted under `params`: MAPE, max, and per row (MoK: also at the
    published default knobs)."""
    out = {}
    for system in sorted({r["system"] for r in rows}):
        recs = [r for r in rows if r["system"] == system]
        v = validate(recs, params)
        scored = []
        for r, x in zip(recs, v.rows):
            row = {"id": r["id"], "measured_ms": x["measured_ms"], "predicted_ms": x["predicted_ms"]}
            if system == "mok":  # the published defaults (no knobs published: 'predicted' is tuned)
                scn = record_scenario(r)
                row["predicted_default_ms"] = predict(scn, default_config(scn), system,
                                                      params).latency_ms
            scored.append(row)
        dflt = [abs(x["predicted_default_ms"] / x["measured_ms"] - 1) for x in scored
                if "predicted_default_ms" in x]
        out[system] = {"n": len(recs), "mape": v.mape, "max": v.max_ape, "rows": scored}
        if dflt:
            out[system]["default_knobs"] = {"mape": sum(dflt) / len(dflt), "max": max(dflt)}
    return out


def term_table(params: Params, rows: list[dict], other: Params | None = None) -> list[dict]:
    """Per MoK row, the critical-path terms (ms) at the tuner's knobs under `params` and, where
    `other` is given (the shipped GB300 fit, for diagnosis), under `other` at its own tuner's
    knobs, with the resources' busy times (work_ms)."""
    out = []
    for r in rows:
        if r["system"] != "mok":
            continue
        scn = record_scenario(r)
        row = {"id": r["id"], "measured_ms": r["latency_ms"]["median"]}
        for label, p in (("transferred", params), ("gb300_fit", other)):
            if p is None:
                continue
            cfg = resolve_configs([r], p)[0]
            res = predict(scn, cfg, "mok", p)
            row[label] = {"latency_ms": res.latency_ms, "terms": dict(res.breakdown_ms),
                          "work": dict(res.work_ms or {}), "config": cfg.as_dict()}
        out.append(row)
    return out


def attribution(params: Params, other: Params, rows: list[dict]) -> list[dict]:
    """What each transferred value carries: the MoK rows' errors with that one value replaced by
    `other`'s (the shipped GB300 fit's), the rest transferred (a diagnosis, not a prediction)."""
    mok = [r for r in rows if r["system"] == "mok"]
    v = validate(mok, params.with_table(None))  # the H200 fit's one gemm_eff for every shape
    out = [{"parameter": "GEMM table", "transferred": "library table",
            "gb300_fit": f"none (gemm_eff {params['gemm_eff']:.3g})",
            "mape": v.mape, "errors": [x["predicted_ms"] / x["measured_ms"] - 1 for x in v.rows]}]
    for name in TRANSFER:
        if other[name] == params[name] or (name == "gemm_eff" and params.gemm_table):
            continue  # equal, or not used where the table covers the rows
        v = validate(mok, params.with_values(**{name: other[name]}))
        out.append({"parameter": name, "transferred": params[name], "gb300_fit": other[name],
                    "mape": v.mape, "errors": [x["predicted_ms"] / x["measured_ms"] - 1
                                               for x in v.rows]})
    return out


def main(argv: list[str] | None = None) -> int:
    p = doc_parser("python -m calibration.transfer", __doc__)
    p.add_argument("--terms", action="store_true",
                   help="also each MoK row's cost terms, transferred beside the shipped GB300 "
                        "fit's, and each transferred value's share of the error (diagnosis)")
    p.add_argument("--json", action="store_true", help="one JSON document")
    p.add_argument("--write-hopper", action="store_true",
                   help=f"write {HOPPER_TARGET}'s parameters and GEMM table, transferred from "
                        f"{HOPPER_SOURCE} and fitted to the H100's pass runs, and h100-hgx8's "
                        f"(no report; about two minutes)")
    p.add_argument("--write-fabric", default=None, metavar="OUT.json",
                   help="write h200-hgx8 parameters transferred from h200-1 with the measured "
                        "NVLink fabric, no 2-GPU layer fit (no report)")
    return run_tool(p, _main, argv)


def _main(a) -> int:
    writers = [f for f, on in (("--write-hopper", a.write_hopper),
                               ("--write-fabric", a.write_fabric is not None)) if on]
    if writers:
        ignored = [f for f, on in (("--terms", a.terms), ("--json", a.json)) if on]
        if ignored or len(writers) > 1:
            raise MokInputError(f"{writers[0]} writes files and prints no report: drop "
                                f"{' and '.join(ignored + writers[1:])}")
        paths = write_hopper() if a.write_hopper else [write_fabric(a.write_fabric)]
        for path in paths:
            print(f"wrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
        return 0
    return report(a)


def report(a) -> int:
    """Print (or --json) the transferred parameters' predictions of the published rows."""
    params = transferred_params()
    rows = read_records([RUNS])
    out = score(params, rows)
    doc = {"params": {k: params[k] for k in TRANSFER}, "gemm_table": params.gemm_table.path,
           "fitted_on": params.fitted_on, "spec_ratios": spec_ratios(), "systems": out}
    if a.terms:
        fit = read_params(PARAMS_DIR / f"{TARGET}.json")
        doc["terms"] = term_table(params, rows, fit)
        doc["attribution"] = attribution(params, fit, rows)
    if a.json:
        print(json.dumps(doc, indent=1))
        return 0
    for field, s in doc["spec_ratios"].items():
        print(f"spec {field}: {SOURCE} {s[SOURCE]:g} ({s['sources'][SOURCE]}) -> {TARGET} "
              f"{s[TARGET]:g} ({s['sources'][TARGET]}): x{s['ratio']:.3g}")
    print(f"GEMM efficiency by shape: {params.gemm_table.path} (H200 library grouped GEMM, "
          f"{len(params.gemm_table.points) // 2} forward points)")
    for system, s in out.items():
        print(f"{system:11s} n {s['n']:2d} MAPE {100 * s['mape']:5.1f}% max {100 * s['max']:5.1f}% "
              f"({'tuned knobs' if 'default_knobs' in s else 'no knobs'}; goal: within 15%)")
        if "default_knobs" in s:
            d = s["default_knobs"]
            print(f"{'':11s}      MAPE {100 * d['mape']:5.1f}% max {100 * d['max']:5.1f}% "
                  f"(published default knobs)")
        for row in s["rows"]:
            err = row["predicted_ms"] / row["measured_ms"] - 1
            extra = ""
            if "predicted_default_ms" in row:
                extra = (f"; default knobs {row['predicted_default_ms']:7.3f} ms "
                         f"({100 * (row['predicted_default_ms'] / row['measured_ms'] - 1):+.1f}%)")
            print(f"  {row['id']:40s} published {row['measured_ms']:7.3f} ms predicted "
                  f"{row['predicted_ms']:7.3f} ms ({100 * err:+.1f}%){extra}")
    if a.terms:
        print("\nterms at the tuner's knobs, ms: transferred / shipped GB300 fit (diagnosis)")
        for row in doc["terms"]:
            t, g = row["transferred"], row["gb300_fit"]
            print(f"  {row['id']} published {row['measured_ms']:.3f}: transferred "
                  f"{t['latency_ms']:.3f}, fit {g['latency_ms']:.3f}")
            for k in t["terms"]:
                print(f"    {k:15s} {t['terms'][k]:7.3f} {g['terms'].get(k, 0.0):7.3f}")
            for k in t["work"]:
                print(f"    work {k:10s} {t['work'][k]:7.3f} {g['work'].get(k, 0.0):7.3f}")
        print("\neach transferred value replaced by the GB300 fit's (the rest transferred): MoK rows")
        for x in doc["attribution"]:
            a, b = (f"{v:9.4g}" if isinstance(v, float) else v
                    for v in (x["transferred"], x["gb300_fit"]))
            print(f"  {x['parameter']:24s} {a} -> {b}: MAPE "
                  f"{100 * x['mape']:5.1f}% (" + ", ".join(f"{100 * e:+.1f}%" for e in x["errors"])
                  + ")")
    return 0


if __name__ == "__main__":
    sys.exit(main())
