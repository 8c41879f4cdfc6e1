"""Write the shipped default parameter files, one per hardware preset (mok_model/params/*.json).

    python -m calibration.defaults

- gb300-nvl72: the Blackwell priors fitted to the published GB300 NVL72 rows
  (calibration/runs/published/gb300_table1.jsonl, made from the published rows in docs/sources.md),
  as calibration/gb300_fit.py says (session 31): each MoK row read at the tuner's knobs and at the
  published defaults, half weight each; sm_scaling held from h200-hgx8 (so fitted after it).
- gb200-nvl72, vr-nvl72, rubin-ultra-nvl576: the GB300 fit transferred (same kernel design,
  Grace/Vera hosts); b200-hgx8, b300-dgx8: the same with an x86 host (host_launch_scale 1).
- h200-hgx8: priors, then the fabric parameters fitted to NVLink microbenchmarks on two real
  H200s (calibration/runs/h200x2/nvlink_micro_*.jsonl, calibration/fit_fabric.py), then the
  compute terms fitted to the real 2-GPU megakernel runs (calibration/runs/h200x2/bench_*.jsonl,
  MoK records; the fabric values stay as measured) and the NCCL terms to the nccl-torch ones.
- h200-1: `mok calibrate` on the committed H200 runs (microbenchmarks, then the megakernel sweeps:
  calibration/runs/h200/ at EP 16 and the space sweep calibration/runs/h200_space/space.jsonl.gz)
  from those priors, with the GEMM efficiency table of the kernel's own GEMM phases
  (mok_model/params/gemm/h200-1.json; gemm_eff not fitted; the forward push/push records of the
  kernel with runtime mode words, before 2026-12-03 15:02 UTC, left out as another kernel:
  mok_model/records.py runtime_mode_words); then its stage-2 pass terms fitted again on today's
  kernel's H200 runs (H200_PASS_RUNS, the drawn seeds 28-33 of 2026-12-06; everything else held:
  most of the runs above timed the kernel of 2026-12-01/02); then the backward megakernel's and
  the FP8 forward's terms fitted to the
  default-variant backward and FP8 records of calibration/runs/h200/ (calibration/passes.py,
  everything else held), and the Gluon FP8 kernel's (fp8_gluon_gemm_eff, fp8_gluon_copy_scale)
  to its 36 records of calibration/runs/h200_gluon/fp8_gluon.jsonl.gz (none held out since the
  refit of 2026-12-02: passes.FIT_HELD_OUT).
  h200-hgx8 takes those terms as fitted on h200-1 (same GPU and kernels;
  no backward or FP8 run on two GPUs yet).
- h100-1: h200-1 moved by stated ratios (calibration/transfer.py --write-hopper), last, its GEMM
  lookup's weight stream and tensor efficiency fitted to the H100's own GEMM phases alone, then
  its stage-2 terms fitted to the H100's own BF16 forward pass runs (transfer.HOPPER_PASS_RUNS;
  the backward and FP8 terms stay h200-1's); with it h100-hgx8: h100-1 with the NVLink fabric
  measured on the two H200s (the in-kernel copy rate by h200-1's in-kernel / stand-alone ratio)
  and h200-hgx8's host, NCCL and library-GEMM terms (transfer.fabric_params): no multi-GPU H100
  record behind it.

    python -m calibration.defaults --gb300

writes only gb300-nvl72.json and the files transferred from it (gb200-nvl72, vr-nvl72,
rubin-ultra-nvl576, b200-hgx8, b300-dgx8), from the shipped h200-hgx8.json (what the full run
writes for them, h200-hgx8 unchanged; about a minute).

    python -m calibration.defaults --pass-group fp8-gluon
    python -m calibration.defaults --pass-group bwd-train [--replace]

writes only that pass group's terms (calibration/passes.py) into h200-1.json and h200-hgx8.json
(and h100-1.json, transferred from h200-1, its stage-2 terms then fitted again to the H100 pass
runs: a few minutes more), every other value held as shipped (the groups share no parameter,
so this is what the full run's last step writes for the group; groups added after the last
full run: fp8-gluon in session 26, bwd-train, the backward on the layer's training tiles, in
session 33; --replace fits a group the file holds again, e.g. when new records of it arrive:
every calibration/runs/h200/*.jsonl[.gz] is read, so a new sweep there, such as bwd_train_s33.jsonl,
enters without a code change).

At the end every run compares the files it wrote with those it found: a value that changed
although its source did not say it was fitted (a measured, design or set value that
calibration/priors.py does not carry) is named in one warning line, to check before shipping.

Every fitted file also gets the fit's uncertainty block (a bootstrap over whole workloads,
calibration/fit.py); the transferred files carry gb300-nvl72's samples, marked as transferred
(an x86 host's host_launch_scale is set, not fitted, so its column is dropped); priors-only
files have none, and their predictions say so.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from mok_model.cli import doc_parser, run_tool
from mok_model.errors import MokInputError
from mok_model.fileio import warn
from mok_model.params import PARAMS_DIR, Params, read_fit_record, read_params, write_params
from mok_model.records import append_records, read_records, record_files

from mok_model.presets import load_hardware

from .cli import calibrate_cli
from .fit import fit
from .fit_fabric import fit_fabric
from .fit_gemm import FREE as GEMM_FREE
from .fit_gemm import fit_library_gemm
from .gb300_fit import HELD as GB300_HELD
from .gb300_fit import READING_WEIGHT, both_readings, held_priors
from .passes import FIT_HELD_OUT, PASS_FREE, fit_passes, merge_uncertainty
from .priors import H200_LOCAL, HOPPER, prior_params
from .published import published_records

RUNS = Path(__file__).parent / "runs" / "published" / "gb300_table1.jsonl"
# the EP-16 sweeps and the v3 kernel's microbenchmarks, then today's kernel's microbenchmarks
# (h200_v4: its schedule build takes 21-32 us, the v3 one's 61-76 us; calibration/micro.py keeps
# the latest of each) and the space sweep (11 presets x EP 4-32 x 64-8192 tokens x 3 routings:
# without it the shipped fit saw EP 16 only and predicted the sweep with 12.4% MAPE)
H200_RUNS = ([Path(__file__).parent / "runs" / "h200" / f
              for f in ("micro.jsonl", "mok_sweep.jsonl.gz", "bench_megakernel.jsonl")]
             + [Path(__file__).parent / "runs" / "h200_v4" / "micro.jsonl",
                Path(__file__).parent / "runs" / "h200_space" / "space.jsonl.gz",
                Path(__file__).parent / "runs" / "h200_space" / "space_noshared.jsonl.gz",
                Path(__file__).parent / "runs" / "h200_space" / "space_mixtral_split.jsonl.gz",
                # today's kernel, 2026-12-02: the sweep's first 132 workloads again (no drift
                # from the records above) and the space at 128 / 512 tokens (session 23)
                Path(__file__).parent / "runs" / "h200_space" / "space_v2.jsonl.gz",
                Path(__file__).parent / "runs" / "h200_space" / "space_t128_512.jsonl.gz",
                # seed 13's drawn shapes on the copy loop that loads its indices ahead (session
                # 39, megakernel.py gather_chunks): the only records of today's loop, so
                # copy_gbps_per_sm is its rate and serial_copy_scale the old loop's over it
                # (seed 14's run of the same day stays held out: h200_drawn/drawn14_ahead.jsonl.gz)
                Path(__file__).parent / "runs" / "h200_space" / "drawn13_ahead.jsonl.gz",
                # the "pipe" loop (session 40: seed 14's drawn shapes) and the "runs" loop
                # (session 41: ten presets at EP 8 / 32, the narrow presets' comm SMs); seeds 15
                # and 16, the presets at EP 16 zipf and mixtral at EP 8 of the same day stay
                # held out (h200_drawn/drawn15_pipe, drawn16_runs; h200_space/
                # presets_zipf_ep16_s41, mixtral_ep8_s41)
                Path(__file__).parent / "runs" / "h200_drawn" / "drawn14_pipe.jsonl.gz",
                Path(__file__).parent / "runs" / "h200_space" / "presets_s41.jsonl.gz",
                Path(__file__).parent / "runs" / "h200_narrow" / "narrow_comm_s41.jsonl"])
# today's kernel's H200 forward runs (seeds 28-33's drawn shapes, the "shares" push loop,
# sessions 68-69, 2026-12-06): h200-1's stage-2 pass terms are fitted on them again after the
# fit on H200_RUNS (fit_h200_kernel_terms), as h100-1's are on the H100's own pass runs. Most of
# H200_RUNS timed the kernel of 2026-12-01/02, whose per-pass fixed time and copies today's no
# longer has: fitted on those alone, h200-1 read today's passes under 0.25 ms 4.4 % slow
# (docs/calibration.md "Session 74"). Seeds 34 and later stay held out.
H200_PASS_RUNS = [Path(__file__).parent / "runs" / "h200_drawn" / f"drawn{seed}.jsonl.gz"
                  for seed in range(28, 34)]
# the terms fitted on them: `mok calibrate`'s default free set for those records (gemm_eff left to
# the table) without push_scan_step_us, which costs a chunk-scanning push loop's column steps:
# today's lanes visit row tiles (analytic.lanes_copy_runs), so those runs move a pass by under
# 2e-5 of its time whatever its value (0.043 or 0.151 us: the same cost to 1e-8) and the value
# left would follow the optimizer's path, not the runs (docs/calibration.md "Session 75")
H200_KERNEL_TERMS = ["mok_fixed_us", "minibatch_overhead_us", "copy_gbps_per_sm",
                     "copy_slowdown_beside_gemm", "push_scan_us", "sm_scaling", "push_pass_us"]
# the megakernel's own GEMM phases on the space-sweep workloads (system mok-gemm; today's variants:
# the presets without a shared expert measured again without the zero shared slot, mixtral-8x7b
# again with split_dn chosen from the shape, 2026-12-01; mixtral-8x7b at 384-1024 tokens between
# those points and six narrow-expert shapes at H 4096 / 7168 (calibration/table_shapes/),
# 2026-12-02; the space's first 72 workloads again and its 128 / 512-token points, session 23), as
# a table (python -m calibration.gemm_table calibration/runs/h200_space/gemm_phases.jsonl.gz
# calibration/runs/h200_space/gemm_phases_noshared.jsonl.gz
# calibration/runs/h200_space/gemm_phases_mixtral_split.jsonl
# calibration/runs/h200_drawn/mixtral_gemm_check.jsonl
# calibration/runs/h200_space/gemm_phases_narrow.jsonl
# calibration/runs/h200_space/gemm_phases_v2.jsonl
# calibration/runs/h200_space/gemm_phases_t128_512.jsonl.gz --system mok-gemm --sustain --out
# mok_model/params/gemm/h200-1.json): h200-1's GEMM efficiency, gemm_eff not fitted
H200_GEMM_TABLE = PARAMS_DIR / "gemm" / "h200-1.json"
FREE = ["gemm_eff", "mok_fixed_us", "wgrad_bytes_per_weight", "host_launch_scale", "nccl_eff"]
H200X2 = Path(__file__).parent / "runs" / "h200x2"
# mok_exposed_launches is free because MoK is timed as a CUDA graph replay (one graph launch
# exposed) while host_launch_scale is set by nccl-torch's eager host costs in the joint fit
# gemm_row_share: a tile's time grows with its valid rows (few rows per expert fill a 128-row
# tile partly). minibatch_overhead_us stays at its prior: freed, it went to 0 and changed no
# held-out figure. nccl-torch's GEMMs are the library's (torch_gemm_eff, torch_hbm_eff), fitted
# first to the gemm-only records (calibration/fit_gemm.py) and then held.
# push_scan_us: our kernel's push lanes visit every chunk of the receiver's minibatch for their
# own rows (analytic.push_scan); across GPUs only these records time it (push and pull dispatch
# at 16 and 32 comm SMs), so it is fitted here, not taken from h200-1's emulated lanes (whose
# index loads are local).
# comm_join_share is freed here, unlike in mok calibrate's default set (calibration/cli.py
# default_free): these records fit it to 1.000, its design value, and held there the fit settles
# in another optimum (push_scan_us 2.58 -> 0 us, the MoK runs' MAPE 3.52 -> 3.86 %; session 73)
H200X2_MOK_FREE = ["gemm_eff", "mok_fixed_us", "sm_scaling", "comm_join_share",
                   "mok_exposed_launches", "gemm_row_share", "push_scan_us"]
# nccl_peer_gbps: at EP 2 NCCL's channels to its one peer bind, not the link (nccl_eff stays at
# its prior: a link share two GPUs cannot show; baselines.nccl_peers_cap)
H200X2_NCCL_FREE = ["nccl_peer_gbps", "host_launch_scale"]
# how our kernel (mok_kernels/megakernel.py), which the 2-GPU records time, works where the
# priors describe the published design: value and source
H200X2_DESIGN = {
    "ring_refill_overlap": (0.0, "design: mok_kernels/megakernel.py: before writing rows past the "
                                 "ring, the comm programs wait for the whole gate/up counter of "
                                 "each minibatch whose rows they overwrite (no refill overlaps it)"),
}


def fit_h200x2_layers(runs: list[dict], fabric: Params, band: str = "none", held=()):
    """The 2-GPU layer fit on `runs` (every record given is training data): the library GEMM
    to the gemm-only records, then the MoK and nccl-torch terms jointly (both use the launch
    terms), fabric values held as given and our kernel's design values (H200X2_DESIGN) set.
    `held`: parameters a microbenchmark measured (fit_fabric's), never freed here.
    Returns (gemm fit, layer fit)."""
    fabric = fabric.with_values(**{k: v for k, (v, _) in H200X2_DESIGN.items()})
    gemm = fit_library_gemm(runs, fabric)
    layer = fit([r for r in runs if r["system"] in ("mok", "nccl-torch")], gemm.params,
                [n for n in H200X2_MOK_FREE + H200X2_NCCL_FREE if n not in held], band=band)
    return gemm, layer


def published_file() -> Path:
    if not RUNS.exists():
        append_records(RUNS, published_records())
    return RUNS


def main() -> None:
    """Run from the repository root (the parameter files name their runs relative to it)."""
    write_params(PARAMS_DIR / "h200-1.json", prior_params("h200-1", H200_LOCAL),
                 "Priors from our H200 probe and public figures (both in docs/sources.md); "
                 "not yet fitted.")
    root = Path(__file__).resolve().parents[1]
    fit_h200_hgx8(root)
    result = write_gb300()  # holds sm_scaling from the h200-hgx8.json just written
    calibrate_cli([str(f.relative_to(root)) for f in H200_RUNS]
                  + ["--out", str((PARAMS_DIR / "h200-1.json").relative_to(root)),
                     "--base", str((PARAMS_DIR / "h200-1.json").relative_to(root)),
                     "--gemm-table", str(H200_GEMM_TABLE.relative_to(root))])
    fit_h200_kernel_terms(root)
    fit_h200_passes(root)
    from .transfer import write_hopper   # transfer imports this module: imported here
    write_hopper()
    print_residuals(result)


def print_residuals(result) -> None:
    for row in result.residuals:
        print(f"{row['id']:<40} measured {row['measured_ms']:.3f} ms  predicted "
              f"{row['predicted_ms']:.3f} ms  error {100 * row['rel_error']:+.1f}%")


def write_gb300():
    """Fit gb300-nvl72 (calibration/gb300_fit.py: both readings, sm_scaling held from the
    h200-hgx8.json on disk) and write it and the files transferred from it; the fit's result."""
    runs = published_file()
    records = read_records([runs])
    train, weights = both_readings(records)
    free = [n for n in FREE if n not in GB300_HELD]
    result = fit(train, held_priors("gb300-nvl72"), free, band="bootstrap", weights=weights)
    gb300 = result.params
    rel = str(runs.relative_to(Path(__file__).resolve().parents[1]))
    fitted_src = {k: (f"fitted to {rel}, each MoK row at the tuner's knobs and at the published "
                      f"defaults, weight {READING_WEIGHT:g} each (calibration/gb300_fit.py; "
                      f"bounded least squares on relative error)") for k in free}
    # the published design's FP8 tiles: the fitted BF16 fraction, until FP8 rows are published
    fp8 = {"fp8_gemm_eff": gb300["gemm_eff"]}
    fitted_src["fp8_gemm_eff"] = ("prior: gemm_eff as fitted to the published BF16 rows (no FP8 "
                                  "rows published; FP8 tiles at the BF16 fraction of their peak)")
    gb300 = Params({**gb300.values, **fp8}, "gb300-nvl72", None, [rel],
                   {**gb300.sources, **fitted_src}, result.uncertainty)
    write_params(PARAMS_DIR / "gb300-nvl72.json", gb300,
                 "Blackwell priors (calibration/priors.py) with five parameters fitted to the "
                 "published GB300 NVL72 rows, each MoK row read at the tuner's knobs and at the "
                 "published defaults (half weight each; the table publishes no knobs) and "
                 "sm_scaling held from h200-hgx8.json (calibration/gb300_fit.py); nothing else "
                 "was tuned toward published numbers.",
                 {"residuals": result.residuals})
    for name, x86 in (("gb200-nvl72", False), ("vr-nvl72", False), ("rubin-ultra-nvl576", False),
                      ("b200-hgx8", True), ("b300-dgx8", True)):
        values = dict(gb300.values)
        sources = {k: f"transferred from the gb300-nvl72 fit: {v}" for k, v in gb300.sources.items()}
        if x86:
            values["host_launch_scale"] = 1.0
            sources["host_launch_scale"] = "x86 host: the preset's launch_us as measured"
        write_params(PARAMS_DIR / f"{name}.json",
                     Params(values, name, None, [rel], sources,
                            transferred(gb300.uncertainty, "gb300-nvl72",
                                        ["host_launch_scale"] if x86 else [])),
                     "Transferred from the gb300-nvl72 fit (same kernel design); no runs on this "
                     "hardware yet.")
    return result


def transferred(block: dict | None, source: str, drop: list[str]) -> dict | None:
    """An uncertainty block carried to a file whose values were transferred from `source`'s
    fit, without the columns of parameters the transfer sets rather than takes (`drop`)."""
    kept = drop_columns(block, drop)
    return None if kept is None else {**kept, "transferred_from": source}


def drop_columns(block: dict | None, drop: list[str]) -> dict | None:
    """An uncertainty block without the columns of the parameters `drop` (None if none is left)."""
    if block is None:
        return None
    keep = [i for i, f in enumerate(block["free"]) if f not in drop]
    if not keep:
        return None
    return {**block, "free": [block["free"][i] for i in keep],
            "summary": {f: v for f, v in block["summary"].items() if f not in drop},
            "samples": [[row[i] for i in keep] for row in block["samples"]]}


PASS_RUNS = Path(__file__).parent / "runs" / "h200"
# the Gluon FP8 kernel's records (session 26, 2026-12-02; their BF16 records are not a pass group)
# (fp8_gluon.jsonl.gz; since session 27 the two registered runs of session 26, the 128 / 512-token
# runs and the 32 / 48 / 64 comm-program runs too; drawn9.jsonl.gz, the seed-9 shapes, held out)
PASS_GLUON_RUNS = [Path(__file__).parent / "runs" / "h200_gluon" / name
                   for name in ("fp8_gluon.jsonl.gz", "registered.jsonl", "registered2.jsonl",
                                "small.jsonl", "comm_programs.jsonl")]


def pass_files() -> list[Path]:
    """The run files the pass groups are fitted to (calibration/passes.py): every record file
    of calibration/runs/h200/ (plain or archived), then the Gluon FP8 kernel's."""
    return record_files(PASS_RUNS) + PASS_GLUON_RUNS


def pass_sources(res, records: list[dict], root: Path, base_sources: dict) -> tuple[dict, list]:
    """(sources with each fitted pass parameter's, the files the fitted groups used) for a
    fit_passes result: the words fit_h200_passes writes."""
    file_of = {r["id"]: str(Path(r["_file"]).resolve().relative_to(root)) for r in records}
    used_by = {g: sorted({file_of[x["id"]] for x in rows}) for g, rows in res.residuals.items()}
    used = sorted({f for files in used_by.values() for f in files})
    sources = dict(base_sources)
    for g, names in res.fitted.items():
        n = len(res.residuals.get(g, []))
        for name in names:
            kind = "training-tile" if g == "bwd-train" else "default-variant"
            sources[name] = (f"fitted to the {n} {kind} {g} MoK records in "
                             f"{', '.join(used_by[g])} (calibration/passes.py; forward values held; "
                             f"zipf and non-default variants skipped"
                             + (f"; {FIT_HELD_OUT[g][0]} {', '.join(FIT_HELD_OUT[g][1])} held out"
                                if g in FIT_HELD_OUT else "") + ")")
    return sources, used


def fit_h200_kernel_terms(root: Path) -> None:
    """h200-1's stage-2 pass terms (H200_KERNEL_TERMS) fitted again on today's kernel's runs
    (H200_PASS_RUNS; `mok calibrate --base`, a bootstrap of as many samples as the fit before),
    every other value held at the fit on H200_RUNS; the file's uncertainty block keeps that fit's
    bootstrap columns for the values this one held (beside_held)."""
    path = PARAMS_DIR / "h200-1.json"
    base, rel = read_params(path), str(path.relative_to(root))
    record = read_fit_record(path)
    samples = ["--band-samples", str(base.uncertainty["n"])] if base.uncertainty else []
    rc = calibrate_cli([str(f.relative_to(root)) for f in H200_PASS_RUNS]
                       + ["--base", rel, "--out", rel, "--hardware", "h200-1",
                          "--gemm-table", str(H200_GEMM_TABLE.relative_to(root)),
                          "--free", ",".join(H200_KERNEL_TERMS), *samples])
    if rc != 0:
        raise MokInputError(f"fitting {rel} on today's kernel's H200 runs failed (the message above)")
    fitted, doc = read_params(path), json.loads(path.read_text(encoding="utf-8"))
    fitted_on = list(base.fitted_on) + [str(f.relative_to(root)) for f in H200_PASS_RUNS]
    unc = beside_held(fitted.uncertainty, base.uncertainty)
    write_params(path, Params(fitted.values, "h200-1", None, fitted_on, fitted.sources, unc)
                 .with_table(fitted.gemm_table),
                 doc["notes"], {**record, "kernel_terms": read_fit_record(path)})


def beside_held(own: dict | None, base: dict | None, source: str | None = None) -> dict | None:
    """A refit's bootstrap block (`own`, the columns of the values it fitted) with the columns of
    the values it held taken from the block of the file it started from (`base`; marked as
    transferred from `source` where that file's values were), paired by index."""
    held = drop_columns(base, own["free"] if own else [])
    if held is not None and source is not None:
        held = {**held, "transferred_from": source}
    if own is None or held is None:
        return own or held
    note = (f"the columns of values this fit held are {source}'s bootstrap samples, transferred "
            f"with them" if source else "the columns of values this fit held are the earlier "
            "fit's bootstrap samples")
    out = {**own, "free": own["free"] + held["free"], "n": min(own["n"], held["n"]),
           "summary": {**held["summary"], **own["summary"]},
           "samples": [a + b for a, b in zip(own["samples"], held["samples"])],
           "held": own["held"] + f"; {note}, paired by index"}
    if source is not None:
        out.update(transferred_from=source, transferred_columns=held["free"])
    return out


def fit_h200_passes(root: Path) -> None:
    """h200-1's backward and FP8 terms (calibration/passes.py), fitted to the default-variant
    records among calibration/runs/h200/*.jsonl with every value of the forward fit held, the
    fit's own bootstrap columns added to the file's uncertainty block; then the same values
    written into h200-hgx8.json (same GPU and kernels)."""
    path = PARAMS_DIR / "h200-1.json"
    base = read_params(path)
    records = read_records(pass_files())
    res = fit_passes(records, base, band="bootstrap")
    sources, used = pass_sources(res, records, root, base.sources)
    doc = json.loads(path.read_text())
    unc = merge_uncertainty(base.uncertainty, res.uncertainty)
    params = Params(res.params.values, base.hardware, None, list(base.fitted_on) + used, sources, unc)
    params = params.with_table(base.gemm_table)
    extra = {**read_fit_record(path), "pass_residuals": res.residuals}
    write_params(path, params, doc["notes"] + " Backward and FP8 terms: calibration/passes.py "
                 f"({'; '.join(res.notes) or 'every record used'}).", extra)
    pass_terms_to_hgx8(params, sources, [n for g in PASS_FREE for n in PASS_FREE[g]])
    print_pass_residuals(res.residuals)


def pass_terms_to_hgx8(params: Params, sources: dict, names: list[str]) -> None:
    """The pass terms `names` as fitted on h200-1 written into h200-hgx8.json (same GPU and
    kernels), each source marked as transferred; the rest of that file kept."""
    hx = PARAMS_DIR / "h200-hgx8.json"
    hdoc, hp = json.loads(hx.read_text()), read_params(hx)
    values = {**hp.values, **{n: params[n] for n in names}}
    hsrc = {**hp.sources, **{n: f"transferred from h200-1 (same GPU and kernels): {sources[n]}"
                             for n in names}}
    hgx8 = Params(values, hp.hardware, None, hp.fitted_on, hsrc, hp.uncertainty)
    write_params(hx, hgx8.with_table(hp.gemm_table), hdoc["notes"], read_fit_record(hx))


def print_pass_residuals(residuals: dict) -> None:
    """Each pass group's records: measured, predicted, error."""
    for g, rows in residuals.items():
        for row in rows:
            print(f"{g} {row['id']:<40} measured {row['measured_ms']:.3f} ms  predicted "
                  f"{row['predicted_ms']:.3f} ms  error {100 * row['rel_error']:+.1f}%")


def add_h200_pass_group(root: Path, group: str, replace: bool = False) -> None:
    """Fit one pass group (calibration/passes.py) on the shipped h200-1.json, its other values
    held, and write its terms as fit_h200_passes writes them after a full fit: value, source,
    the file among fitted_on, its residuals in pass_residuals, its bootstrap column appended to
    the uncertainty block, the group's notes among the pass notes; then the values into
    h200-hgx8.json (transferred). For a group the file already holds residuals of: refused,
    or with `replace` its residuals and bootstrap columns (the block's by_group) taken out
    first and the group fitted again."""

    from .passes import add_uncertainty, drop_uncertainty

    if group not in PASS_FREE:
        raise MokInputError(f"--pass-group {group!r}: one of {', '.join(PASS_FREE)}")
    path = PARAMS_DIR / "h200-1.json"
    doc, base = json.loads(path.read_text()), read_params(path)
    record = read_fit_record(path)
    held = record.get("pass_residuals", {})
    unc = base.uncertainty
    if group in held:
        if not replace:
            raise MokInputError(f"--pass-group {group}: {path.name} already holds it (--replace "
                                f"fits it again; the full run, python -m calibration.defaults, "
                                f"refits every group)")
        held = {g: rows for g, rows in held.items() if g != group}
        unc = drop_uncertainty(unc, group) if unc else None
    records = read_records(pass_files())
    res = fit_passes(records, base, band="bootstrap", only=(group,))
    sources, used = pass_sources(res, records, root, base.sources)
    fitted_on = list(base.fitted_on) + [f for f in used if f not in base.fitted_on]
    unc = add_uncertainty(unc, res.uncertainty) if unc else None
    params = Params(res.params.values, base.hardware, None, fitted_on, sources, unc)
    params = params.with_table(base.gemm_table)
    extra = {**record, "pass_residuals": {**held, **res.residuals}}
    notes = doc["notes"]
    new = [n for n in res.notes if n not in notes]  # the others' notes are in the file already
    if new:
        assert notes.endswith(")."), "the pass notes end the file's notes"
        notes = notes[:-2] + "; " + "; ".join(new) + ")."
    write_params(path, params, notes, extra)
    pass_terms_to_hgx8(params, sources, PASS_FREE[group])
    from .transfer import write_hopper   # h100-1 is h200-1 moved: written again with it
    write_hopper()
    print_pass_residuals({group: res.residuals.get(group, [])})


def fit_h200_hgx8(root: Path) -> None:
    """h200-hgx8 from two real H200s: fabric from microbenchmarks, then compute and NCCL terms
    from the 2-GPU layer runs (fabric values kept as measured)."""
    rel = lambda p: str(p.relative_to(root))  # noqa: E731
    micro_files = record_files(H200X2, "nvlink_micro_*.jsonl")
    layer_files = record_files(H200X2, "bench_*.jsonl")
    base = prior_params("h200-hgx8", HOPPER)
    fab = fit_fabric(read_records(micro_files), base, load_hardware("h200-hgx8"))
    runs = read_records(layer_files)
    gemm, layer = fit_h200x2_layers(runs, fab.params, band="bootstrap", held=fab.fitted)
    sources = dict(base.sources)
    for name, f in fab.fitted.items():
        sources[name] = (f"measured: {f['how']} ({len(f['records'])} records in "
                         f"{', '.join(rel(Path(x).resolve()) for x in f['files'])})")
    layers = ", ".join(rel(f) for f in layer_files)
    for name, (_, why) in H200X2_DESIGN.items():
        sources[name] = why
    for name in H200X2_MOK_FREE:
        if name not in fab.fitted:
            sources[name] = f"fitted to the real 2-GPU MoK records in {layers} (fabric held as measured)"
    for name in H200X2_NCCL_FREE:
        if name not in fab.fitted:
            sources[name] = f"fitted to the real 2-GPU nccl-torch records in {layers}"
    for name in GEMM_FREE:
        sources[name] = (f"fitted to the {len(gemm.ids)} real 2-GPU gemm-only records (torch's "
                         f"grouped GEMMs alone) in {layers} (calibration/fit_gemm.py)")
    params = Params(layer.params.values, "h200-hgx8", None,
                    [rel(f) for f in micro_files + layer_files], sources, layer.uncertainty)
    write_params(PARAMS_DIR / "h200-hgx8.json", params,
                 "H200 priors; fabric parameters measured on two real H200s (NV18) by "
                 "calibration/nvlink_bench.py and fitted by calibration/fit_fabric.py; compute and "
                 "NCCL terms fitted to the real 2-GPU layer runs. EP > 2 is extrapolation.",
                 {"fabric_fit": {"fitted": fab.fitted, "notes": fab.notes,
                                 "measurements": fab.measurements},
                  "gemm_only_residuals": gemm.residuals, "residuals": layer.residuals})


# where a value's source says it was fitted (or moved from a fitted one): a refit may change it
FITTED_SOURCES = ("stage 1, fitted", "stage 2, fitted", "fitted", "transferred from")


def file_values(path: Path) -> dict:
    """{value name: (value, source)} of one parameters file."""
    values = read_params(path)
    return {k: (values[k], values.sources.get(k, "")) for k in values.values}


def shipped_values() -> dict:
    """{file name: file_values} of every parameters file on disk."""
    return {path.name: file_values(path) for path in sorted(PARAMS_DIR.glob("*.json"))}


def unfitted_changes(before: dict, after: dict) -> list[str]:
    """One line per value that a refit changed although its source before did not say it was
    fitted: a measured, design or set value that calibration/priors.py does not carry (session
    69: pipe_copy_scale, measured 1.25, came back as its 1.0 prior)."""
    lines = []
    for name, values in sorted(before.items()):
        for k, (v, source) in sorted(values.items()):
            new = after.get(name, {}).get(k)
            if new is not None and new[0] != v and not source.startswith(FITTED_SOURCES):
                lines.append(f"{name} {k}: {v:.6g} ({source[:60]}...) -> {new[0]:.6g} "
                             f"({new[1][:60]}...)")
    return lines


def _main(a) -> int:
    before = shipped_values()
    _run_main(a)
    changed = unfitted_changes(before, shipped_values())
    if changed:
        warn(f"{len(changed)} value(s) no fit moved before were changed; check each against "
             f"calibration/priors.py before shipping: " + "; ".join(changed))
    return 0


def _run_main(a) -> None:
    if a.replace and a.pass_group is None:
        raise MokInputError("--replace: only with --pass-group GROUP (the full run refits "
                            "every group)")
    if a.gb300 and (a.pass_group is not None or a.replace):
        raise MokInputError("--gb300: alone (it writes the GB300 family only)")
    if a.gb300:
        print_residuals(write_gb300())
    elif a.pass_group is not None:   # '' is refused there, never taken for the full run
        add_h200_pass_group(Path(__file__).resolve().parents[1], a.pass_group, a.replace)
    else:
        main()


def parser():
    p = doc_parser("python -m calibration.defaults", __doc__)
    p.add_argument("--pass-group", default=None,
                   help="fit and write only this pass group of h200-1 (calibration/passes.py)")
    p.add_argument("--gb300", action="store_true",
                   help="fit and write only gb300-nvl72 and the files transferred from it "
                        "(h200-hgx8.json as shipped)")
    p.add_argument("--replace", action="store_true",
                   help="with --pass-group: fit a group the file already holds again")
    return p


if __name__ == "__main__":
    sys.exit(run_tool(parser(), _main))
