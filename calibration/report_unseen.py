"""Held-out figures of the shipped parameters on run records no fit reads (e.g. the unseen
shapes, calibration/runs/h200_unseen/): per pass and engine, MAPE, max and signed error,
Spearman within workloads and the tuner's regret among each workload's measured MoK settings.

    python -m calibration.report_unseen calibration/runs/h200_unseen/unseen.jsonl.gz \\
        calibration/runs/h200_unseen/unseen_bwd.jsonl [--hardware h200-1] [--params FILE]

(`calibration.registered` compares predictions registered before a run; this one predicts with
the parameters shipped now, so it reads as held out only for records no fit has used.)
"""

from __future__ import annotations

import argparse
import sys

from mok_model.cli import MokParser, run_tool
from mok_model.errors import MokInputError
from mok_model.fileio import warn
from mok_model.records import predictable, read_records, superseded_kernel

from .checks import params_file, required_text, shipped_params
from .registered import figures
from .scoring import predict_records


def main(argv: list[str] | None = None) -> int:
    ap = MokParser(prog="python -m calibration.report_unseen", description=__doc__,
                   formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+", help="run-record files no fit reads")
    ap.add_argument("--hardware", default="h200-1")
    ap.add_argument("--params", default=None, help="parameters file (default: the hardware's)")
    return run_tool(ap, _run, argv)


def _run(a: argparse.Namespace) -> None:
    if a.params is None:
        params = shipped_params(a.hardware, other="--params FILE")
    else:
        required_text(a.hardware, "--hardware", "preset name")
        params = params_file(a.params, "--params")
        if params.hardware != a.hardware:
            raise MokInputError(f"--params {a.params!r} was fitted for hardware "
                                f"{params.hardware!r}, not --hardware {a.hardware!r}")
    mok = [r for r in read_records(a.runs) if r["system"] == "mok"]
    recs = [r for r in mok if r["hardware"]["preset"] == a.hardware]
    if len(recs) < len(mok):   # another card's runs are not this hardware's question
        others = sorted({r["hardware"]["preset"] for r in mok} - {a.hardware})
        warn(f"{len(mok) - len(recs)} MoK records of other hardware ({', '.join(others)}) left "
             f"out: --hardware {a.hardware} predicts its own")
    # as heldout_errors: a routing the model cannot draw, or a kernel that no longer runs, is
    # not a question of today's model
    kept = [r for r in recs if predictable(r) and not superseded_kernel(r)]
    if len(kept) < len(recs):
        warn(f"{len(recs) - len(kept)} MoK records of {a.hardware} left out: a routing the model "
             f"cannot draw or a kernel that no longer runs (records.predictable, superseded_kernel)")
    if not kept:
        raise MokInputError(f"no MoK records of {a.hardware} the model predicts in "
                            f"{', '.join(a.runs)}")
    lines = []          # every prediction before the first line: a refusal stays one line
    for pass_ in sorted({r["pass"] for r in kept}):
        part = [r for r in kept if r["pass"] == pass_]
        for engine in ("analytic", "sim"):     # scored as runs that happened, as fits score them
            lines.append(f"{pass_} {engine:8s} "
                         f"{figures(part, list(predict_records(part, params, engine)))}")
    print("\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
