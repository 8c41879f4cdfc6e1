"""H200 -> GB300 by stated ratios: predict the published GB300 NVL72 rows with no GB300 fit.

    python -m calibration.transfer [--json]

GB300's parameters are built from two sources only: the design facts of the published kernel
on Blackwell (calibration/priors.py, BLACKWELL: how its minibatches, waves and comm SMs work) and
every efficiency or overhead that was fitted or measured on real H200s (mok_model/params/
h200-hgx8.json), moved by the ratios in TRANSFER below. The published rows
(calibration/runs/published/gb300_table1.jsonl) are then predicted at the tuner's knobs (the
table publishes none) and, for the MoK rows, also at the published default knobs
(mok_model.scenario.default_config; `predicted_default_ms`). Nothing here reads a GB300 fit.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from mok_model.params import Params, read_params
from mok_model.predict import predict
from mok_model.presets import load_hardware
from mok_model.records import read_records, record_scenario
from mok_model.scenario import default_config

from .defaults import RUNS
from .priors import BLACKWELL, prior_params
from .validate import validate

H200 = Path(__file__).resolve().parents[1] / "mok_model" / "params" / "h200-hgx8.json"

# parameter -> (ratio GB300 / H200, why). A fraction of a spec (efficiency) moves unchanged: the
# spec itself (TFLOP/s, TB/s, link GB/s) comes from each hardware preset.
TRANSFER = {
    "gemm_eff": (1.0, "the same fraction of the dense BF16 peak (preset: 989 -> 2500 TF/s)"),
    "hbm_eff": (1.0, "the same fraction of HBM bandwidth (preset: 4.8 -> 8 TB/s)"),
    "link_eff": (1.0, "the same fraction of the NVLink bandwidth (preset: 450 -> 900 GB/s per "
                      "direction)"),
    "copy_gbps_per_sm": (1.0, "a copy SM is limited by its bytes in flight over the latency, "
                              "not by the link: the same rate per SM (measured 25 GB/s, 2 H200)"),
    "push_copy_scale": (1.0, "as measured on H200 (writes no slower than reads)"),
    "signal_remote_us": (1.0, "one NVLink round trip; the NVL72 switch hop is the preset's "
                              "hop latency, added by the model"),
    "push_signal_per_peer_us": (1.0, "per peer released, as measured on H200"),
    "sm_scaling": (1.0, "the GEMM rate's growth with SMs, as fitted on H200"),
    "minibatch_overhead_us": (1.0, "per-minibatch signalling, as fitted on H200"),
    "mok_fixed_us": (1.0, "residual per pass, as fitted on H200"),
    "nccl_eff": (1.0, "the same fraction of the link for NCCL all-to-all"),
    "host_launch_scale": (1.0, "the host's launch cost relative to the preset's launch_us, as "
                               "fitted on the H200 host"),
}


def transferred_params():
    """GB300 parameters: BLACKWELL design priors, efficiencies from the H200 fit by TRANSFER."""
    h200 = read_params(H200)
    base = prior_params("gb300-nvl72", BLACKWELL)
    values, sources = dict(base.values), dict(base.sources)
    for name, (ratio, why) in TRANSFER.items():
        values[name] = h200[name] * ratio
        sources[name] = f"transferred from h200-hgx8 ({h200[name]:.4g}) x {ratio:g}: {why}"
    return Params(values, "gb300-nvl72", None, [str(H200.relative_to(H200.parents[2]))], sources)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m calibration.transfer", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--json", action="store_true", help="one JSON document")
    a = p.parse_args(argv)
    load_hardware("gb300-nvl72")
    params = transferred_params()
    rows = read_records([RUNS])
    out = {}
    for system in sorted({r["system"] for r in rows}):
        recs = [r for r in rows if r["system"] == system]
        v = validate(recs, params)
        scored = []
        for r, x in zip(recs, v.rows):
            row = {"id": r["id"], "measured_ms": x["measured_ms"], "predicted_ms": x["predicted_ms"]}
            if system == "mok":  # the published defaults (no knobs published: 'predicted' is tuned)
                scn = record_scenario(r)
                row["predicted_default_ms"] = predict(scn, default_config(scn), system,
                                                      params).latency_ms
            scored.append(row)
        dflt = [abs(x["predicted_default_ms"] / x["measured_ms"] - 1) for x in scored
                if "predicted_default_ms" in x]
        out[system] = {"n": len(recs), "mape": v.mape, "max": v.max_ape, "rows": scored}
        if dflt:
            out[system]["default_knobs"] = {"mape": sum(dflt) / len(dflt), "max": max(dflt)}
    if a.json:
        print(json.dumps({"params": {k: params[k] for k in TRANSFER}, "systems": out}, indent=1))
        return 0
    for system, s in out.items():
        print(f"{system:11s} n {s['n']:2d} MAPE {100 * s['mape']:5.1f}% max {100 * s['max']:5.1f}% "
              f"({'tuned knobs' if 'default_knobs' in s else 'no knobs'}; goal: within 15%)")
        if "default_knobs" in s:
            d = s["default_knobs"]
            print(f"{'':11s}      MAPE {100 * d['mape']:5.1f}% max {100 * d['max']:5.1f}% "
                  f"(published default knobs)")
        for row in s["rows"]:
            err = row["predicted_ms"] / row["measured_ms"] - 1
            extra = ""
            if "predicted_default_ms" in row:
                extra = (f"; default knobs {row['predicted_default_ms']:7.3f} ms "
                         f"({100 * (row['predicted_default_ms'] / row['measured_ms'] - 1):+.1f}%)")
            print(f"  {row['id']:40s} published {row['measured_ms']:7.3f} ms predicted "
                  f"{row['predicted_ms']:7.3f} ms ({100 * err:+.1f}%){extra}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
