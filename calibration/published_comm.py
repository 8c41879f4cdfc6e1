"""Published NVL72 communication figures as mok-run/1 records, and the fabric model's check.

    python -m calibration.published_comm            # print the check table (writes nothing)
    python -m calibration.published_comm --write    # (re)create calibration/runs/published/nvl72_comm.jsonl

Source (the only NVL72 dispatch/combine figures we found with their setup stated): the Hybrid-EP
README of DeepEP, "GB200 Platform" tables, https://github.com/deepseek-ai/DeepEP/blob/
41cad94449628adfb1cd1cadd82aeda83d4fbf0f/docs/README_Hybrid-EP.md . Setup stated there: GB200,
4096 tokens per rank, hidden 7168, top-8, random uniform router, 8 local experts per rank, BF16
dispatch, BF16 combine; "algorithm bandwidth" in GB/s. The benchmark that prints them
(tests/test_hybrid_ep.py of the same repository) divides the bytes of the BF16 rows a rank
receives (one row per token and destination rank, the rank's own rows included) by the time.

Each record keeps the published bandwidth in `value` (GB/s) and says in `measurement` whether it
timed the kernel alone ("kernel") or the Torch API call ("torch-api"). `latency_ms.median` is derived, and
says so: the expected received bytes of that setup (P x 4096 tokens x the chance that a token has
at least one of its 8 experts on a given rank x 7168 x 2 bytes) over the published bandwidth.
No NCCL all-to-all figure on NVL72 with a stated setup was found (searched: nccl-tests issues and
PRs, vendor pages); none is recorded.

The check predicts each figure with the baselines' own exchange term (mok_model/baselines.py
`_exchange`: bytes over min(link x link_eff, moving SMs x copy rate), a pulled combine at the
measured pull share of the link, DeepEP's chunk handovers as a floor, plus a signal per peer;
COMM_KERNELS says how each kernel moves
rows and why) and the shipped gb200-nvl72 parameters, which were never fitted on these records.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from mok_model.baselines import COMM_KERNELS, _exchange, api_buffer_copy
from mok_model.cli import doc_parser, run_tool
from mok_model.errors import MokInputError
from mok_model.params import Params, load_params
from mok_model.presets import load_hardware, load_model
from mok_model.records import append_records, read_records
from mok_model.scenario import Scenario
from mok_model.workload import traffic

RUNS = Path(__file__).parent / "runs" / "published" / "nvl72_comm.jsonl"
URL = ("https://github.com/deepseek-ai/DeepEP/blob/41cad94449628adfb1cd1cadd82aeda83d4fbf0f/"
       "docs/README_Hybrid-EP.md")
TOKENS, HIDDEN, TOP_K, LOCAL_EXPERTS = 4096, 7168, 8, 8

# (system, measurement, ranks, sms) -> (dispatch BF16 GB/s, combine GB/s), as published
HYBRIDEP = {  # "HybridEP Performance Results", GB200 Platform
    ("torch-api", 8, 16): (550.10, 538.44), ("torch-api", 8, 32): (545.71, 568.94),
    ("torch-api", 16, 16): (472.84, 474.48), ("torch-api", 16, 32): (523.48, 521.55),
    ("torch-api", 24, 16): (441.89, 444.40), ("torch-api", 24, 32): (507.32, 483.76),
    ("torch-api", 32, 16): (485.50, 423.19), ("torch-api", 32, 32): (484.22, 464.54),
    ("torch-api", 36, 16): (469.96, 418.27), ("torch-api", 36, 32): (479.02, 447.89),
    ("kernel", 8, 16): (750.15, 684.27), ("kernel", 8, 32): (764.03, 737.13),
    ("kernel", 16, 16): (661.93, 600.75), ("kernel", 16, 32): (706.95, 666.26),
    ("kernel", 24, 16): (637.80, 565.53), ("kernel", 24, 32): (665.97, 639.80),
    ("kernel", 32, 16): (629.79, 547.25), ("kernel", 32, 32): (642.23, 605.15),
    ("kernel", 36, 16): (612.85, 543.27), ("kernel", 36, 32): (632.31, 596.99),
}
DEEPEP = {  # "DeepEP Performance Results", GB200 Platform (Torch API only)
    ("torch-api", 8, 16): (362.01, 310.21), ("torch-api", 8, 24): (512.72, 425.95),
    ("torch-api", 8, 32): (615.78, 519.57),
    ("torch-api", 16, 16): (328.80, 278.34), ("torch-api", 16, 24): (442.47, 378.32),
    ("torch-api", 16, 32): (520.76, 442.51),
    ("torch-api", 24, 16): (324.64, 126.53), ("torch-api", 24, 24): (450.22, 163.62),
    ("torch-api", 24, 32): (502.84, 207.10),
}


def reach(ranks: int) -> float:
    """Chance that a token with TOP_K distinct uniform experts has one on a given rank."""
    experts = LOCAL_EXPERTS * ranks
    return 1.0 - math.comb(experts - LOCAL_EXPERTS, TOP_K) / math.comb(experts, TOP_K)


def expected_bytes(ranks: int) -> float:
    """Expected BF16 bytes one rank receives (its own rows included), as the benchmark counts."""
    return ranks * TOKENS * reach(ranks) * HIDDEN * 2.0


def published_comm_records() -> list[dict]:
    out = []
    for system, table in (("hybridep", HYBRIDEP), ("deepep", DEEPEP)):
        for (how, ranks, sms), pair in table.items():
            for op, gbps in zip(("dispatch", "combine"), pair):
                ms = expected_bytes(ranks) / (gbps * 1e9) * 1e3
                what = ("kernel time only" if how == "kernel" else "Torch API call")
                out.append({
                    "schema": "mok-run/1", "id": f"published-nvl72-{system}-{op}-{how}-ep{ranks}-sm{sms}",
                    "date": "2025-10-01",
                    "hardware": {"preset": "gb200-nvl72", "gpu": "NVIDIA GB200", "gpus": ranks, "sms": 148,
                                 "fabric": "nvlink5", "driver": "not published"},
                    "software": {"torch": "not published", "triton": "n/a", "commit": "not published"},
                    "system": f"{system}-{op}",
                    "model": {"hidden": HIDDEN, "top_k": TOP_K, "routed_experts": LOCAL_EXPERTS * ranks,
                              "shared_experts": 0},
                    "ep": ranks, "emulated_peers": False, "tokens": TOKENS, "pass": "fwd", "precision": "bf16",
                    "config": {"comm_sms": sms}, "measurement": how,
                    "routing": {"kind": "uniform", "seed": 0},
                    "latency_ms": {"median": round(ms, 4)},
                    "value": {"gbps": gbps, "quantity": "algorithm bandwidth: BF16 bytes received per rank "
                              "(one row per token and destination rank, own rows included) / time"},
                    "source": "published",
                    "note": (f"{URL}, GB200 Platform, {system} table, {ranks} ranks, {sms} SMs, {what}: "
                             f"{op} {gbps} GB/s (published). latency_ms is derived: expected received "
                             f"bytes {expected_bytes(ranks) / 1e6:.1f} MB (P x 4096 x P(token reaches a rank)"
                             f" = {reach(ranks):.4f} x 7168 x 2) / that bandwidth."),
                })
    return out


def scenario_for(rec: dict) -> Scenario:
    """The layer of a published communication record on its hardware preset."""
    m = rec["model"]
    base = load_model("kimi-k2")  # expert width and shared expert do not enter the exchange
    model = base.with_(name=f"comm-bench-ep{rec['ep']}", hidden=m["hidden"], top_k=m["top_k"],
                       routed_experts=m["routed_experts"], shared_experts=0, shared_width=0)
    return Scenario(load_hardware(rec["hardware"]["preset"]), model, rec["ep"], rec["tokens"],
                    "fwd", rec["precision"], rec["routing"]["kind"], rec["routing"]["seed"])


def predict_gbps(rec: dict, p: Params) -> dict:
    """The model's algorithm bandwidth for a record: the median rank's received bytes over its
    exchange time (kernel), and over exchange + one host sync (Torch API, as the baseline model
    charges a DeepEP/HybridEP call) + HybridEP's copy of the rows between its registered buffer
    and a PyTorch tensor (COMM_KERNELS: api_buffer_copy)."""
    scn = scenario_for(rec)
    t = traffic(scn)
    system, op = rec["system"].split("-", 1)
    sms = rec["config"]["comm_sms"]
    dedup = t.dedup_rows.astype(np.float64)
    remote = np.where(np.eye(scn.ep, dtype=bool), 0.0, dedup)
    own = np.diagonal(dedup)  # rows a rank keeps: DeepEP's chunked kernels still buffer them
    row = 2.0 * scn.model.hidden
    if op == "dispatch":
        secs = _exchange(scn, p, row, remote.sum(0), remote.sum(1), sms, system=system, own=own)
        got = dedup.sum(0) * row  # bytes each rank receives, its own rows included
        copied = got  # the received rows, copied out of the buffer
    else:
        secs = _exchange(scn, p, row, remote.sum(1), remote.sum(0), sms, system=system, op="combine",
                         own=own)
        got = dedup.sum(1) * row  # the combine sends back what the dispatch brought
        copied = dedup.sum(0) * row  # this rank's expert outputs, copied into the buffer
    secs = np.broadcast_to(secs, (scn.ep,))
    sync = p["host_sync_us"] * p["host_launch_scale"] * 1e-6
    if COMM_KERNELS[system].api_buffer_copy:
        sync = sync + api_buffer_copy(scn, p, copied, 1.0)
    return {"kernel_gbps": float(np.median(got / secs)) / 1e9,
            "api_gbps": float(np.median(got / (secs + sync))) / 1e9}


def check(records: list[dict], p: Params) -> list[dict]:
    """Per record: published and predicted bandwidth and the error of the predicted time."""
    rows = []
    for rec in records:
        pred = predict_gbps(rec, p)
        how = rec["measurement"]
        g = pred["kernel_gbps"] if how == "kernel" else pred["api_gbps"]
        pub = rec["value"]["gbps"]
        rows.append({"id": rec["id"], "system": rec["system"], "measured": how, "ep": rec["ep"],
                     "sms": rec["config"]["comm_sms"], "published_gbps": pub, "predicted_gbps": g,
                     "time_error": pub / g - 1.0})  # predicted time / published time - 1
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = doc_parser("python -m calibration.published_comm", __doc__)
    ap.add_argument("--write", action="store_true", help=f"create {RUNS} (refuses if it exists)")
    return run_tool(ap, report, argv)


def report(a) -> int:
    """Write the records with --write (once), then print the published vs predicted table."""
    if a.write:
        if RUNS.exists():
            raise MokInputError(f"--write: {RUNS} exists; its records are written once "
                                f"(append-only)")
        append_records(RUNS, published_comm_records())
    p = load_params(None, "gb200-nvl72")
    rows = check(read_records([RUNS]), p)
    print("| system | measured | EP | SMs | published GB/s | predicted GB/s | time error |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['system']} | {r['measured']} | {r['ep']} | {r['sms']} | {r['published_gbps']:.0f} | "
              f"{r['predicted_gbps']:.0f} | {100 * r['time_error']:+.1f}% |")
    for key in sorted({(r["system"], r["measured"]) for r in rows}):
        err = [abs(r["time_error"]) for r in rows if (r["system"], r["measured"]) == key]
        print(f"{key[0]} {key[1]}: n {len(err)}, mean |time error| {100 * np.mean(err):.1f}%, "
              f"max {100 * max(err):.1f}%")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
