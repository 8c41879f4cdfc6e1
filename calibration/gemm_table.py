"""Build a GEMM efficiency table (mok_model/gemm_table.py) from records of the kernel's own GEMM
phases alone.

    python -m calibration.gemm_table RUN_FILES... --out TABLE.json [--hardware h200-1]
                                     [--system gemm-only] [--relative] [--sustain] [--json]

Every measured forward BF16 record of `--system` (default `gemm-only`) on the hardware becomes one
point: its shape (rows per active expert on the measured rank, I, H, local experts), its tile
(the record's `tiles`, else the kernel's default) and eff = ideal / measured
(mok_model/gemm_table.py ideal_seconds, with the parameters' gemm_tile_m and gemm_tile_n). The
table file names the record files. An absolute table (the default) must be made of records of
the megakernel's own GEMM phases. Every `gemm-only` record committed so far (calibration/runs/
h200*/, the space sweep included: mok_kernels/bench.py run_gemm_only) times torch._grouped_mm,
the library's grouped GEMM that nccl-torch runs (calibration/fit_gemm.py fits torch_gemm_eff to
them): from those, only a `--relative` table is honest (the library's shape trend, at the level
gemm_eff fits for the megakernel). The megakernel's own GEMM phases are system `mok-gemm`
(mok_kernels/bench.py run_mok_gemm; calibration/runs/h200_space/gemm_phases.jsonl.gz): the shipped
h200-1 table is `--system mok-gemm` on that file (docs/calibration.md).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from mok_model.cli import doc_parser, run_tool
from mok_model.errors import MokInputError
from mok_model.fileio import check_beside_output, check_output_file, flush_warnings
import math

import numpy as np
from scipy.optimize import least_squares

from mok_model.gemm_table import (IDEAL_TILE, MECHANISM, SCHEMAS, SUSTAIN, GemmTable,
                                  mechanism_seconds, points_path, table_point, transferred_table,
                                  write_table)
from mok_model.presets import load_hardware
from mok_model.records import in_id_order, read_records, record_scenario, routing_reproduced, todays_kernel

from .checks import required_text

SYSTEM = "gemm-only"
GEMM_SYSTEMS = ("gemm-only", "mok-gemm")   # records of GEMM phases alone (the library's, ours)
TILE_M, TILE_N = IDEAL_TILE, IDEAL_TILE  # the parameters' gemm_tile_m, gemm_tile_n (priors.py)
# the phase mechanism's starting point and bounds (mok_model/gemm_table.py): a tile at 60% of an
# SM's peak (the kernel's large-shape efficiency, docs/results.md), 1 us per item (a K-pipeline fill),
# the H200's measured device copy, 4.20 of its 4.8 TB/s HBM (calibration/priors.py hbm_eff: a
# start on the bound stalled the fit in a local minimum), 20 us per launch (a graph replay); the
# long-phase term (SUSTAIN), where fitted, from 2% a doubling past 8 ms (session 68's fit to the
# heavy shapes' phases on both cards: 1-6% past 4-5 ms)
MECH_START = {"tensor_eff": 0.6, "item_us": 1.0, "hbm_gbps": 4200.0, "launch_us": 20.0,
              "sustain_loss": 0.02, "sustain_ms": 8.0}
# the shipped h200-1 table is built with --sustain (calibration/defaults.py H200_GEMM_TABLE): the
# reports that rebuild tables per fold (report_space, report_gemm_table) build them the same way
SHIPPED_SUSTAIN = True
MECH_BOUNDS = {"tensor_eff": (0.05, 1.0), "item_us": (1e-3, 50.0), "hbm_gbps": (100.0, 4800.0),
               "launch_us": (1e-3, 500.0), "sustain_loss": (1e-4, 0.3), "sustain_ms": (0.5, 200.0)}


def table_records(records: list[dict], hardware: str, system: str = SYSTEM) -> list[dict]:
    """The records a table is made of: measured forward BF16 runs of `system` on `hardware`, of
    today's kernel (records.todays_kernel: not the wide-expert GEMM phases of group_m 1, nor the
    phases that ran a zero shared expert, both measured again) on a routing the model draws, the
    fits' rule (records.routing_reproduced: not the few-expert hot runs of the old draw); in
    record-id order, so a table (its points, its mechanism fit and the order of its shapes, which
    breaks ties between equally near shapes in a lookup) does not follow the order the files or
    their records come in."""
    return in_id_order(r for r in records if r["system"] == system and r["hardware"]["preset"] == hardware
                       and r["source"] == "measured" and r["pass"] == "fwd" and r["precision"] == "bf16"
                       and todays_kernel(r) and routing_reproduced(r))


def build_table(records: list[dict], hardware: str, files: list[str], system: str = SYSTEM,
                path: str | None = None, tile_m: int = TILE_M, tile_n: int = TILE_N,
                level: str = "absolute", known: dict | None = None,
                sustain: bool = False) -> GemmTable:
    """A table of one point per record of `system` among `records` (see the module docstring);
    level "relative" for records of another GEMM implementation than the megakernel's. `known`:
    points already made from records (`record_points`, by record id) to reuse: a point depends on
    its own record only, so a fold's table is the known points of its training records.
    `sustain`: fit the mechanism's long-phase term too (fit_mechanism)."""
    recs = table_records(records, hardware, system)
    if not recs:
        raise MokInputError(f"no measured forward BF16 {system} records of {hardware} to build a "
                            f"GEMM table from")
    known = known or {}
    points = tuple(known[r["id"]] if r["id"] in known
                   else table_point(r, record_scenario(r), tile_m, tile_n) for r in recs)
    what = ("the kernel's GEMM phases alone" if level == "absolute" else
            "another GEMM implementation alone, e.g. the library's grouped GEMM: its shape trend")
    notes = (f"{len(points)} {system} records of {hardware} ({what}); "
             f"eff = tile-quantized FLOPs ({tile_m} x {tile_n} tiles) at peak on all SMs / measured "
             f"(python -m calibration.gemm_table)")
    mech = fit_mechanism(points, sustain) if level == "absolute" else None
    if mech is not None:
        notes += ("; phase mechanism fitted to the points (fit_mechanism): "
                  + ", ".join(f"{k} {v:.4g}" for k, v in mech.items()))
    return GemmTable(hardware, points, tuple(files), path, notes, level, mech)


def fit_mechanism(points, sustain: bool = False) -> dict | None:
    """The phase mechanism's constants (mok_model/gemm_table.py MECHANISM, and SUSTAIN with
    `sustain`) that fit the points' measured times best in log (relative) error, bounded least
    squares from MECH_START (a deterministic fit); None if a point lacks its features (an older
    table)."""
    if not points or not all("mech" in p and "measured_ms" in p for p in points):
        return None
    names = MECHANISM + (SUSTAIN if sustain else ())
    meas = np.array([float(p["measured_ms"]) * 1e-3 for p in points])

    def res(x):
        mech = dict(zip(names, np.exp(x)))
        return np.log([mechanism_seconds(p["mech"], mech) for p in points]) - np.log(meas)

    lo = np.log([MECH_BOUNDS[k][0] for k in names])
    hi = np.log([MECH_BOUNDS[k][1] for k in names])
    x0 = np.clip(np.log([MECH_START[k] for k in names]), lo, hi - 1e-9)
    fit = least_squares(res, x0, bounds=(lo, hi), method="trf")
    return {k: float(math.exp(v)) for k, v in zip(names, fit.x)}


def fit_lookup(src: GemmTable, hardware: str, path, start: dict, records: list[dict],
               system: str = "mok-gemm", free: tuple[str, ...] = MECHANISM) -> tuple[dict, dict]:
    """The mechanism constants that `src` (a measured table) transferred to `hardware` should look
    up on, fitted to the target's own GEMM phases alone (`records` of `system`, table_records'
    rule) in log error with src's residuals as they are: bounded least squares from `start` (a
    deterministic fit) of the constants named in `free`, the others held at `start`'s. Returns
    (mechanism, {"n", "mape_before", "mape_after"}), "before" the phases' MAPE looked up on
    `start`."""
    recs = table_records(records, hardware, system)
    if not recs:
        raise MokInputError(f"no measured forward BF16 {system} records of {hardware} to fit a "
                            f"transferred table's mechanism on")
    scns = [record_scenario(r) for r in recs]
    meas = np.log([r["latency_ms"]["median"] * 1e-3 for r in recs])

    def mech(x):
        return {**start, **{k: float(math.exp(v)) for k, v in zip(free, x)}}

    def res(x):
        t = transferred_table(src, hardware, path, mech(x), "")
        launch = t.lookup["launch_us"] * 1e-6
        return np.log([t.scenario_seconds(s) + launch for s in scns]) - meas

    lo = np.log([MECH_BOUNDS[k][0] for k in free])
    hi = np.log([MECH_BOUNDS[k][1] for k in free])
    x0 = np.clip(np.log([start[k] for k in free]), lo, hi - 1e-9)
    fit = least_squares(res, x0, bounds=(lo, hi), method="trf")
    mape = lambda r: float(np.mean(np.abs(np.expm1(r))))  # noqa: E731
    return mech(fit.x), {"n": len(recs), "mape_before": mape(res(x0)),
                         "mape_after": mape(fit.fun)}


def record_points(records: list[dict], hardware: str, system: str = SYSTEM,
                  tile_m: int = TILE_M, tile_n: int = TILE_N) -> dict:
    """{record id: table point} of every table record among `records` (build_table's `known`)."""
    return {r["id"]: table_point(r, record_scenario(r), tile_m, tile_n)
            for r in table_records(records, hardware, system)}


def check_out(out: str, runs: list[str], hardware: str) -> None:
    """Refuse an --out the table cannot go to, before the fit: check_output_file's rules (an
    existing table gets its "will be replaced" warning), an existing file that is not a GEMM
    table (a parameters file was replaced by one in silence), a table of another hardware (an
    h100-1 table was written over the shipped h200-1 one, session 71), and the points file
    written beside it (points/NAME: a file named `points` there ended the write in a
    traceback)."""
    path = check_output_file(out, "--out", ".json", inputs=[("RUN_FILES", r) for r in runs],
                             replaces=SCHEMAS)
    if path.is_file() and path.stat().st_size:
        doc = json.loads(path.read_text(encoding="utf-8"))   # a table, {} or [] (above)
        had = doc.get("hardware") if isinstance(doc, dict) else None
        if had is not None and had != hardware:
            raise MokInputError(f"--out {out!r} is a GEMM table of {had}, not of --hardware "
                                f"{hardware}: it is not replaced; name another file")
    check_beside_output(points_path(path), out, "--out", "points file")   # points/NAME


def main(argv: list[str] | None = None) -> int:
    p = doc_parser("python -m calibration.gemm_table", __doc__)
    p.add_argument("runs", nargs="+", help="run-record files")
    p.add_argument("--out", required=True, help="table file to write (.json)")
    p.add_argument("--hardware", default="h200-1")
    p.add_argument("--system", default=SYSTEM, help="system of the GEMM-phase records")
    p.add_argument("--relative", action="store_true",
                   help="the records time another GEMM implementation (the library's grouped "
                        "GEMM): use only the table's shape trend, times gemm_eff")
    p.add_argument("--sustain", action="store_true",
                   help="fit the mechanism's long-phase term too (mok_model/gemm_table.py "
                        "sustained)")
    p.add_argument("--json", action="store_true")
    return run_tool(p, _run, argv)


def _run(a: argparse.Namespace) -> int:
    required_text(a.hardware, "--hardware", "preset name")
    check_out(a.out, a.runs, a.hardware)
    load_hardware(a.hardware)           # a preset name or TOML file, named if unknown
    required_text(a.system, "--system", "system name")
    if a.system not in GEMM_SYSTEMS:    # a layer's pass (mok) is not a GEMM phase
        raise MokInputError(f"--system {a.system!r}: records of GEMM phases alone, one of "
                            f"{', '.join(GEMM_SYSTEMS)}")
    if a.relative and a.sustain:
        raise MokInputError("--sustain fits a term of the phase mechanism, which a --relative "
                            "table does not have: give one of them")
    records = read_records(a.runs)      # before the names are tidied ('' is not '.')
    files = [str(Path(f)) for f in a.runs]
    table = build_table(records, a.hardware, files, a.system, a.out,
                        level="relative" if a.relative else "absolute", sustain=a.sustain)
    flush_warnings()        # every check passed: "will be replaced" is said before the write
    write_table(a.out, table)
    if a.json:
        print(json.dumps(table.to_json(), indent=1))
    else:
        for pt in table.points:
            print(f"{pt['model']:<18} ep {pt['ep']:>2} n {pt['tokens']:>5} {pt['routing']:<10} "
                  f"rows/expert {pt['rows_per_expert']:8.1f} I {pt['expert_width']:>5} "
                  f"L {pt['local_experts']:>3}: {pt['measured_ms']:.3f} ms, eff {pt['eff']:.3f}")
        print(f"wrote {a.out} ({len(table.points)} points, {len(table.shapes)} shapes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
