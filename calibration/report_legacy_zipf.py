"""The zipf records measured before 2026-12-01 03:40 UTC, predicted in the expert popularity order
their kernels drew (torch.randperm on the GPU, mok_model/presets/legacy_zipf_orders.json), beside
the same records predicted in the model's own order and the uniform, hot and new zipf records of
the same files; shipped parameters, no refit.

    python -m calibration.report_legacy_zipf --params mok_model/params/h200-1.json \\
        calibration/runs/h200/*.jsonl* calibration/runs/h200_space/space.jsonl.gz [--sim-every K]

Per group: records, MAPE, max error, signed mean, Spearman within workloads (configurations of
one workload, >= 3). --sim-every K adds the simulator on every K-th record of each group.
"""

from __future__ import annotations

import collections
import sys

import numpy as np

from mok_model.cli import doc_parser, int_at_least, run_tool
from mok_model.errors import MokInputError
from mok_model.params import read_params
from mok_model.records import model_records, read_records, record_zipf_order

from .validate import validate


def group(rec: dict) -> str:
    """Routing (zipf split by order), with the pass and precision when not the BF16 forward."""
    kind = rec["routing"].get("kind", "uniform")
    if kind == "zipf":
        name = "zipf legacy" if record_zipf_order(rec) == "torch-cuda-randperm" else "zipf model"
    else:
        name = "hot" if kind in ("hot", "onehot") else kind
    extra = [x for x in (rec["pass"], rec["precision"]) if x not in ("fwd", "bf16")]
    return " ".join([name] + extra)


def as_model_order(rec: dict) -> dict:
    """The record as if its kernels had drawn the model's order (what the model said before)."""
    return {**rec, "routing": {**rec["routing"], "order": "model"}}


def line(name: str, recs: list[dict], params, engine: str) -> str:
    v = validate(recs, params, engine)
    signed = np.mean([r["predicted_ms"] / r["measured_ms"] - 1 for r in v.rows])
    rho = "n/a" if v.spearman is None else f"{v.spearman:.2f} ({v.groups})"
    return (f"{engine:8s} {name:32s} n {v.n:5d} MAPE {100 * v.mape:5.1f}% max "
            f"{100 * v.max_ape:6.1f}% signed {100 * signed:+6.1f}% Spearman {rho}")


def main(argv: list[str] | None = None) -> int:
    p = doc_parser("python -m calibration.report_legacy_zipf", __doc__)
    p.add_argument("runs", nargs="+")
    p.add_argument("--params", required=True)
    p.add_argument("--sim-every", type=int_at_least(0), default=0,
                   help="simulator on every K-th record (0: analytic only)")
    return run_tool(p, report, argv)


def report(a) -> None:
    """One line per routing group and engine: MAPE, max, signed error, Spearman."""
    params = read_params(a.params)
    records, notes = model_records(read_records(a.runs))
    other = sorted({r["hardware"]["preset"] for r in records} - {params.hardware})
    records = [r for r in records if r["hardware"]["preset"] == params.hardware]
    if not records:     # notes only and exit 0 was no report
        raise MokInputError(f"no MoE layer records of {params.hardware} (--params {a.params}) the "
                            f"model predicts in {', '.join(a.runs)}"
                            + (f"; their layer records are of {other}" if other else ""))
    if other:
        notes.append(f"records of other hardware than --params' {params.hardware} were not "
                     f"used: {other}")
    for note in notes:
        print(f"note: {note}")
    by = collections.defaultdict(list)
    for r in records:
        by[group(r)].append(r)
    legacy = [r for r in records if record_zipf_order(r) == "torch-cuda-randperm"]
    for name in [n for n in by if n.startswith("zipf legacy")]:
        by[name.replace("legacy", "legacy as model order")] = [as_model_order(r) for r in by[name]]
    engines = ["analytic"] + (["sim"] if a.sim_every > 0 else [])
    for engine in engines:
        for name in sorted(by):
            recs = by[name] if engine == "analytic" else by[name][::a.sim_every]
            if recs:
                print(line(name, recs, params, engine), flush=True)
        systems = collections.Counter(r["system"] for r in legacy)
        if engine == "analytic" and len(systems) > 1:
            for s in sorted(systems):
                print(line(f"  legacy zipf, {s}", [r for r in legacy if r["system"] == s],
                           params, engine), flush=True)


if __name__ == "__main__":
    sys.exit(main())
