"""Leave-one-out errors on the published GB300 NVL72 rows: fit on all rows but one (from the
priors, same free parameters as `mok calibrate` would pick), predict the held-out one.

    python -m calibration.loo [RUN_FILE] [--json]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from mok_model.cli import doc_parser, run_tool
from mok_model.errors import MokInputError
from mok_model.records import in_id_order, read_records

from .cli import default_free, priors_for
from .fit import fit, predict_records, predictable

PUBLISHED = Path(__file__).parent / "runs" / "published" / "gb300_table1.jsonl"


def leave_one_out(records: list[dict], free: list[str] | None = None) -> list[dict]:
    """Per record, in record-id order: the prediction of a fit that did not see it, and its
    relative error. The records are taken in id order, not the order they come in: the fit to
    nine rows stops at another point of its flat directions for another row order (row 1's MoK
    LOO error read -18.2% in the file's order and -2.2% with the lines shuffled)."""
    records = in_id_order(r for r in records if predictable(r))
    presets = sorted({r["hardware"]["preset"] for r in records})
    if len(presets) > 1:    # each fold would fit one hardware's priors to the others' rows
        raise MokInputError(f"the records span hardware {presets}: a fit is of one hardware's "
                            f"records; give one hardware's files")
    if not presets:         # a header and no rows, exit 0, was no answer
        raise MokInputError("no records of an MoE layer system the model predicts to leave out")
    rows = []
    for i, rec in enumerate(records):
        train = records[:i] + records[i + 1:]
        hw = rec["hardware"]["preset"]
        names = free if free is not None else default_free(train, set())
        res = fit(train, priors_for(hw), names)
        pred = float(predict_records([rec], res.params)[0])
        meas = rec["latency_ms"]["median"]
        rows.append({"id": rec["id"], "system": rec["system"], "measured_ms": meas,
                     "predicted_ms": pred, "rel_error": pred / meas - 1.0, "free": names,
                     "train_mape": float(np.mean([abs(r["rel_error"]) for r in res.residuals]))})
    return rows


def summary(rows: list[dict]) -> dict:
    """LOO MAPE and max error, over all rows and over the MoK rows alone."""
    def stats(sel):
        e = np.array([abs(r["rel_error"]) for r in sel])
        return {"n": len(sel), "mape": float(e.mean()), "max_ape": float(e.max())} if len(sel) else None

    return {"all": stats(rows), "mok": stats([r for r in rows if r["system"] == "mok"]),
            "baselines": stats([r for r in rows if r["system"] != "mok"])}


def main(argv: list[str] | None = None) -> int:
    p = doc_parser("python -m calibration.loo", __doc__)
    p.add_argument("runs", nargs="*", default=[str(PUBLISHED)])
    p.add_argument("--json", action="store_true")
    return run_tool(p, report, argv)


def report(a) -> int:
    """Print (or --json) the leave-one-out rows and their summary."""
    rows = leave_one_out(read_records(a.runs))
    s = summary(rows)
    if a.json:
        print(json.dumps({"rows": rows, "summary": s}, indent=1))
        return 0
    print(f"leave-one-out on {', '.join(a.runs)} (each row predicted by a fit to the others)")
    for r in rows:
        print(f"  {r['id']:<36} measured {r['measured_ms']:7.3f} ms  LOO predicted "
              f"{r['predicted_ms']:7.3f} ms  error {100 * r['rel_error']:+6.1f}%")
    for name, st in s.items():
        if st:
            print(f"LOO MAPE ({name}, n={st['n']}): {100 * st['mape']:.2f}%  "
                  f"max {100 * st['max_ape']:.2f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
