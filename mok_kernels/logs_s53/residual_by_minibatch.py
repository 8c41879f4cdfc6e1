"""Signed analytic error of forward BF16 MoK records by minibatch, hidden size and token regime
(session 53's residual tables).

    PYTHONPATH=. python mok_kernels/logs_s53/residual_by_minibatch.py h200-1 RUNS...
"""

import collections
import sys

import numpy as np

from calibration.scoring import predict_records
from mok_model.params import load_params
from mok_model.records import model_records, read_records, record_scenario


def h_bin(hidden: int) -> str:
    return "H>=6144" if hidden >= 6144 else ("H<=3072" if hidden <= 3072 else "H 4096-5120")


def main(hardware: str, files: list[str]) -> None:
    recs, _ = model_records([r for r in read_records(files) if r["system"] == "mok"
                             and r["pass"] == "fwd" and r["precision"] == "bf16"])
    pred = predict_records(recs, load_params(None, hardware))
    by = collections.defaultdict(list)
    for r, p in zip(recs, pred):
        key = (r["config"]["minibatch"], h_bin(record_scenario(r).model.hidden),
               "tok>512" if r["tokens"] > 512 else "tok<=512")
        by[key].append(p / r["latency_ms"]["median"] - 1)
    for k in sorted(by, key=lambda k: (k[1], k[2], k[0])):
        v = np.array(by[k])
        print(k, f"n {len(v):4d} signed median {100 * np.median(v):+5.1f}% mean {100 * v.mean():+5.1f}%")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
