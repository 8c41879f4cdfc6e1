"""Session 70: the shipped h200-1 GEMM table on the held-out H200 drawn phases (seeds 21-35, today's
kernel): signed error by measured duration, shape, tiles and the weight stream's share of the
compute time; and by duration, the mechanism alone against its residual factor. A diagnostic.

    PYTHONPATH=. python mok_kernels/logs_s70/phase_residuals.py
"""

import glob

import numpy as np

from calibration.gemm_table import table_records
from mok_model.gemm_table import _mechanism_inputs, mechanism_seconds
from mok_model.params import read_params
from mok_model.records import read_records, record_scenario

DURATIONS = [0, 0.5, 1, 2, 3, 5, 7, 10, 20, 100]


def rows() -> list[dict]:
    t = read_params("mok_model/params/h200-1.json").gemm_table
    launch = t.lookup["launch_us"] * 1e-6
    no_stream = {**t.lookup, "hbm_gbps": 0}
    out = []
    for f in sorted(glob.glob("calibration/runs/h200_drawn/gemm_phases_drawn*.jsonl")):
        for r in table_records(read_records([f]), "h200-1", "mok-gemm"):
            s, m = record_scenario(r), r["latency_ms"]["median"] * 1e-3
            feats, resid = _mechanism_inputs(t, s)
            compute = mechanism_seconds(feats, no_stream) - launch
            md = s.model
            out.append({"err": (t.scenario_seconds(s) + launch) / m - 1, "ms": m * 1e3,
                        "mech_err": mechanism_seconds(feats, t.lookup) / m - 1, "resid": resid,
                        "H": md.hidden, "I": md.expert_width, "local experts": md.routed_experts // s.ep,
                        "rows per expert": s.tokens * md.top_k / md.routed_experts,
                        "stream / compute": feats["weight_bytes"] / (t.lookup["hbm_gbps"] * 1e9) / compute,
                        "tiles": tuple(r["tiles"].get(k, 1) for k in ("group_m", "dn_blocks", "split_dn"))})
    return out


def by(data: list[dict], key: str, edges: list[float]) -> None:
    v, e, ms = (np.array([r[k] for r in data], float) for k in (key, "err", "ms"))
    mid = (ms >= 2) & (ms < 10)
    for lo, hi in zip(edges[:-1], edges[1:]):
        sel = (v >= lo) & (v < hi)
        if sel.any():
            m = f"{100 * e[sel & mid].mean():+5.1f}%" if (sel & mid).any() else "  n/a"
            print(f"  {key} {lo:g}-{hi:g}: n {sel.sum():4d} mean {100 * e[sel].mean():+5.1f}% "
                  f"MAPE {100 * abs(e[sel]).mean():4.1f}%  (2-10 ms: n {(sel & mid).sum()}, {m})")


def main() -> None:
    data = rows()
    print(f"{len(data)} held-out H200 phases")
    by(data, "ms", DURATIONS)
    by(data, "H", [0, 2048, 3072, 4096, 5120, 6144, 7168, 9000])
    by(data, "I", [0, 512, 1024, 2048, 4096, 9000])
    by(data, "local experts", [0, 2, 4, 8, 16, 64, 300])
    by(data, "rows per expert", [0, 8, 32, 128, 512, 2048, 1e6])
    by(data, "stream / compute", [0, 0.2, 0.4, 0.6, 0.8, 1.0, 1.5, 100])
    print("by tiles (group_m, dn_blocks, split_dn)")
    for tiles in sorted({r["tiles"] for r in data}):
        by([r for r in data if r["tiles"] == tiles], "ms", [0, 1, 2, 5, 10, 100])
        print(f"    ^ tiles {tiles}")
    print("by duration: the whole lookup, the mechanism alone, the residual factor")
    ms = np.array([r["ms"] for r in data])
    for lo, hi in zip(DURATIONS[:-1], DURATIONS[1:]):
        sel = [r for r, s in zip(data, (ms >= lo) & (ms < hi)) if s]
        if sel:
            print(f"  {lo:g}-{hi:g} ms: n {len(sel):4d} lookup {100 * np.mean([r['err'] for r in sel]):+5.1f}%  "
                  f"mechanism {100 * np.mean([r['mech_err'] for r in sel]):+5.1f}%  "
                  f"residual factor {np.mean([r['resid'] for r in sel]):.3f}")


if __name__ == "__main__":
    main()
