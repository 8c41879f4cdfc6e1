"""Where the analytic model misses MoK on the drawn seeds: per model, the mean log error of MoK
records and of the same rank's GEMMs alone (gemm-only, by the shipped GEMM table), and their
difference (the miss in MoK's overhead over its GEMMs). A diagnostic, no fit.

    PYTHONPATH=. python mok_kernels/logs_s66/overhead_miss.py PARAMS RUN_FILES...
"""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np

from mok_model.params import read_params
from mok_model.records import read_records, record_scenario


def main(params: str, files: list[str]) -> None:
    p = read_params(params)
    t = p.gemm_table
    launch = t.lookup["launch_us"] * 1e-6
    rows = []
    for f in files:
        out = subprocess.run([sys.executable, "-m", "mok_model.cli", "validate", "--params", params,
                              f, "--json"], capture_output=True, text=True, check=True).stdout
        pred = {r["id"]: r["predicted_ms"] for r in json.loads(out)["rows"]}
        by_model: dict = {}
        for r in read_records([f]):
            m = by_model.setdefault(r["model"]["name"], {"mok": [], "gemm": [], "ep": set()})
            m["ep"].add(r["ep"])
            meas = r["latency_ms"]["median"]
            if r["system"] == "gemm-only":
                g = (t.scenario_seconds(record_scenario(r)) + launch) * 1e3
                m["gemm"].append(np.log(meas / g))
            elif r["id"] in pred:
                m["mok"].append(np.log(meas / pred[r["id"]]))
        for name, v in by_model.items():
            if v["mok"] and v["gemm"]:
                rows.append((name, sorted(v["ep"]), 100 * np.mean(v["mok"]),
                             100 * np.mean(v["gemm"])))
    print(f"{'model':36s} {'EP':14s} mok miss  gemm miss  overhead miss (log measured/predicted, %)")
    for name, ep, a, g in sorted(rows, key=lambda r: r[2] - r[3]):
        print(f"{name:36s} {str(ep):14s} {a:+7.1f}  {g:+8.1f}  {a - g:+11.1f}")
    d = np.array([a - g for *_, a, g in rows])
    print(f"{len(rows)} models: overhead miss mean {d.mean():+.1f}%, sd {d.std():.1f}%")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
