"""Build a GEMM efficiency table (mok_model/gemm_table.py) from records of the kernel's own GEMM
phases alone.

    python -m calibration.gemm_table RUN_FILES... --out TABLE.json [--hardware h200-1]
                                     [--system gemm-only] [--relative] [--json]

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
(mok_kernels/bench.py run_mok_gemm; calibration/runs/h200_space/gemm_phases.jsonl): the shipped
h200-1 table is `--system mok-gemm` on that file (docs/calibration.md).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from mok_model.errors import MokInputError
from mok_model.fileio import check_output_file
from mok_model.gemm_table import GemmTable, table_point, write_table
from mok_model.records import default_variant, read_records, record_scenario

SYSTEM = "gemm-only"
TILE_M, TILE_N = 128, 128  # the parameters' gemm_tile_m, gemm_tile_n (calibration/priors.py)


def table_records(records: list[dict], hardware: str, system: str = SYSTEM) -> list[dict]:
    """The records a table is made of: measured forward BF16 runs of `system` on `hardware`, of
    today's kernel variant (records.default_variant: e.g. not the wide-expert GEMM phases of
    group_m 1, measured again with the per-shape group_m)."""
    return [r for r in records if r["system"] == system and r["hardware"]["preset"] == hardware
            and r["source"] == "measured" and r["pass"] == "fwd" and r["precision"] == "bf16"
            and default_variant(r)]


def build_table(records: list[dict], hardware: str, files: list[str], system: str = SYSTEM,
                path: str | None = None, tile_m: int = TILE_M, tile_n: int = TILE_N,
                level: str = "absolute", known: dict | None = None) -> GemmTable:
    """A table of one point per record of `system` among `records` (see the module docstring);
    level "relative" for records of another GEMM implementation than the megakernel's. `known`:
    points already made from records (`record_points`, by record id) to reuse: a point depends on
    its own record only, so a fold's table is the known points of its training records."""
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
    return GemmTable(hardware, points, tuple(files), path, notes, level)


def record_points(records: list[dict], hardware: str, system: str = SYSTEM,
                  tile_m: int = TILE_M, tile_n: int = TILE_N) -> dict:
    """{record id: table point} of every table record among `records` (build_table's `known`)."""
    return {r["id"]: table_point(r, record_scenario(r), tile_m, tile_n)
            for r in table_records(records, hardware, system)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m calibration.gemm_table", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("runs", nargs="+", help="run-record files")
    p.add_argument("--out", required=True, help="table file to write (.json)")
    p.add_argument("--hardware", default="h200-1")
    p.add_argument("--system", default=SYSTEM, help="system of the GEMM-phase records")
    p.add_argument("--relative", action="store_true",
                   help="the records time another GEMM implementation (the library's grouped "
                        "GEMM): use only the table's shape trend, times gemm_eff")
    p.add_argument("--json", action="store_true")
    a = p.parse_args(argv)
    try:
        check_output_file(a.out, "--out", ".json")
        files = [str(Path(f)) for f in a.runs]
        table = build_table(read_records(files), a.hardware, files, a.system, a.out,
                            level="relative" if a.relative else "absolute")
        write_table(a.out, table)
    except MokInputError as exc:
        print(f"mok: error: {exc}", file=sys.stderr)
        return 2
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
