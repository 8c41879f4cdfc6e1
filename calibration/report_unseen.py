"""Held-out figures of the shipped parameters on run records no fit reads (e.g. the unseen
shapes, calibration/runs/h200_unseen/): per pass and engine, MAPE, max and signed error,
Spearman within workloads and the tuner's regret among each workload's measured MoK settings.

    python -m calibration.report_unseen calibration/runs/h200_unseen/unseen.jsonl \\
        calibration/runs/h200_unseen/unseen_bwd.jsonl [--hardware h200-1] [--params FILE]

(`calibration.registered` compares predictions registered before a run; this one predicts with
the parameters shipped now, so it reads as held out only for records no fit has used.)
"""

from __future__ import annotations

import argparse
import sys

from mok_model.cli import MokParser
from mok_model.errors import MokInputError
from mok_model.predict import predict
from mok_model.records import read_records, record_config, record_scenario
from mok_model.sim import simulate

from .checks import params_file, required_text, shipped_params
from .registered import figures


def main(argv: list[str] | None = None) -> int:
    ap = MokParser(prog="python -m calibration.report_unseen", description=__doc__,
                   formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+", help="run-record files no fit reads")
    ap.add_argument("--hardware", default="h200-1")
    ap.add_argument("--params", default=None, help="parameters file (default: the hardware's)")
    try:
        a = ap.parse_args(argv)
        if a.params is None:
            params = shipped_params(a.hardware, other="--params FILE")
        else:
            required_text(a.hardware, "--hardware", "preset name")
            params = params_file(a.params, "--params")
            if params.hardware != a.hardware:
                raise MokInputError(f"--params {a.params!r} was fitted for hardware "
                                    f"{params.hardware!r}, not --hardware {a.hardware!r}")
        recs = [r for r in read_records(a.runs) if r["system"] == "mok"
                and r["hardware"]["preset"] == a.hardware]
        if not recs:
            raise MokInputError(f"no MoK records of {a.hardware} in {', '.join(a.runs)}")
    except MokInputError as exc:
        print(f"{ap.prog}: error: {exc}", file=sys.stderr)
        return 2
    for pass_ in sorted({r["pass"] for r in recs}):
        part = [r for r in recs if r["pass"] == pass_]
        for engine, fn in (("analytic", predict), ("sim", simulate)):
            pred = [fn(record_scenario(r), record_config(r), "mok", params).latency_ms
                    for r in part]
            print(f"{pass_} {engine:8s} {figures(part, pred)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
