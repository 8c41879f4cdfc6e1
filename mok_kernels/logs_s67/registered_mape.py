"""Session 67: MAPE, max and mean signed error to two decimals of registration files against
their runs (the MoK pairs calibration.registered matches), one line per file and engine; to
compare two registrations of one plan closer than its one-decimal report.

    PYTHONPATH=. python mok_kernels/logs_s67/registered_mape.py RUNS PRED [PRED ...]
"""
from __future__ import annotations

import sys

import numpy as np

from calibration.registered import match, read_predictions
from mok_model.records import read_records


def main(runs: str, preds: list[str]) -> None:
    recs = read_records([runs])
    for path in preds:
        p = read_predictions(path)
        for eng in ("analytic", "sim"):
            pairs = [(a, r) for a, r in match([x for x in p if x["engine"] == eng], recs)
                     if a["system"] == "mok"]
            e = np.array([a["predicted_ms"] / r["latency_ms"]["median"] - 1 for a, r in pairs])
            print(f"{path} {eng}: n {len(e)} MAPE {100 * np.abs(e).mean():.2f} % max "
                  f"{100 * np.abs(e).max():.2f} % mean signed {100 * e.mean():+.2f} %")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
