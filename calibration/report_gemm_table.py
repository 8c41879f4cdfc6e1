"""How well a GEMM table predicts the kernel's GEMM phases at shapes it never measured.

    python -m calibration.report_gemm_table RUN_FILES... [--check FILES] [--hardware h200-1]

For each model among the `mok-gemm` records of RUN_FILES in turn, a table is built from the
other models' records (mechanism refitted with its long-phase term, as the shipped table is:
calibration/gemm_table.py build_table) and predicts
the held-out model's records; `--check` (comma list of record files) predicts those records with
the table of all RUN_FILES, e.g. drawn shapes no table has seen (calibration/draw_shapes.py). A
prediction is the table's time plus the mechanism's launch (a record times one launch). Prints
MAPE, max error and bias per model and pooled.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from mok_model.cli import doc_parser, run_tool
from mok_model.errors import MokInputError
from mok_model.records import read_records, record_scenario, record_where, shared_record

from .checks import required_text
from .gemm_table import SHIPPED_SUSTAIN, build_table, record_points, table_records
from .split import group_value

SYSTEM = "mok-gemm"


def predicted_ms(table, rec: dict) -> float:
    """A GEMM-phase record's time by a table: its phases plus the launch."""
    return (table.scenario_seconds(record_scenario(rec)) + table.mechanism["launch_us"] * 1e-6) * 1e3


def _line(label: str, errors: list[float]) -> str:
    e = np.asarray(errors)
    return (f"{label:<28} n {len(e):>4}  MAPE {100 * np.abs(e).mean():5.2f}%  "
            f"max {100 * np.abs(e).max():4.0f}%  bias {100 * e.mean():+5.1f}%")


def main(argv: list[str] | None = None) -> int:
    p = doc_parser("python -m calibration.report_gemm_table", __doc__)
    p.add_argument("runs", nargs="+", help="run-record files the tables are built from")
    p.add_argument("--check", default=None, help="comma list of record files to predict")
    p.add_argument("--hardware", default="h200-1")
    return run_tool(p, _run, argv)


def _table_records(files: list[str], hardware: str, what: str) -> list[dict]:
    """The table's records among `files`, or a refusal naming the files and what they hold."""
    records = read_records(files)
    out = table_records(records, hardware, SYSTEM)
    if not out:
        have = sorted({r["hardware"]["preset"] for r in records if r["system"] == SYSTEM})
        held = f"its {SYSTEM} records are of {have}" if have else f"it holds no {SYSTEM} records"
        raise MokInputError(f"{what} {', '.join(files)}: no measured forward BF16 {SYSTEM} records "
                            f"of --hardware {hardware!r} ({held})")
    return out


def _run(a: argparse.Namespace) -> int:
    required_text(a.hardware, "--hardware", "preset name")
    if a.check is not None and any(not f.strip() for f in a.check.split(",")):
        raise MokInputError(f"--check {a.check!r}: a comma list of record files is required (no "
                            f"empty elements)")
    recs = _table_records(a.runs, a.hardware, "RUN_FILES")
    checked = _table_records(a.check.split(","), a.hardware, "--check") if a.check else []
    if both := shared_record(recs, checked):  # a table predicting its own points is no check
        again, twin = both
        raise MokInputError(f"--check {record_where(again)}: record {again['id']!r} is one the "
                            f"table is built from ({record_where(twin)}); check records outside "
                            f"RUN_FILES")
    models = {group_value(r, "model") for r in recs}
    if len(models) < 2:
        raise MokInputError(f"RUN_FILES {', '.join(a.runs)}: {SYSTEM} records of one model "
                            f"({', '.join(models)}); holding out by model needs two or more")
    known = record_points(recs, a.hardware, SYSTEM)
    pooled = []
    print("held out by model (a table of the other models' records):")
    for model in sorted({group_value(r, "model") for r in recs}):
        table = build_table([r for r in recs if group_value(r, "model") != model], a.hardware, [],
                            SYSTEM, known=known, sustain=SHIPPED_SUSTAIN)
        errs = [predicted_ms(table, r) / r["latency_ms"]["median"] - 1
                for r in recs if group_value(r, "model") == model]
        pooled += errs
        print("  " + _line(model, errs))
    print("  " + _line("pooled", pooled))
    if checked:
        table = build_table(recs, a.hardware, [], SYSTEM, known=known, sustain=SHIPPED_SUSTAIN)
        errs = [predicted_ms(table, r) / r["latency_ms"]["median"] - 1 for r in checked]
        print(f"checked with the table of all {len(recs)} records:")
        print("  " + _line(a.check if len(a.check) <= 28 else "--check files", errs))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
