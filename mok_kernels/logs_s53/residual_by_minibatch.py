"""Signed analytic error of forward BF16 MoK records by minibatch (session 53's residual table).

    PYTHONPATH=. python mok_kernels/logs_s53/residual_by_minibatch.py h200-1 RUNS...
"""

import collections
import sys

import numpy as np

from mok_model.params import load_params
from mok_model.predict import predict
from mok_model.records import (model_records, read_records, record_config, record_design,
                               record_scenario)

WIDE_H = ("kimi-k2", "deepseek-v3", "glm-5")


def main(hardware: str, files: list[str]) -> None:
    params = load_params(None, hardware)
    recs, _ = model_records([r for r in read_records(files) if r["system"] == "mok"
                             and r["pass"] == "fwd" and r["precision"] == "bf16"])
    by = collections.defaultdict(list)
    for r in recs:
        p = predict(record_scenario(r), record_config(r), "mok",
                    params.with_design(**record_design(r)), refuse_overflow=False).latency_ms
        group = "big-H" if r["model"] in WIDE_H else "other"
        c = r["config"]
        by[(c["minibatch"], group, c["dispatch"])].append(p / r["latency_ms"]["median"] - 1)
    for k in sorted(by, key=lambda k: (k[1], k[2], k[0])):
        v = np.array(by[k])
        print(k, f"n {len(v):4d} signed median {100 * np.median(v):+5.1f}% mean {100 * v.mean():+5.1f}%")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
