"""benchmarks/kernel_space.py: best MoK over GEMMs alone per preset and token band."""

import importlib.util
from pathlib import Path

spec = importlib.util.spec_from_file_location(
    "kernel_space", Path(__file__).parent.parent / "benchmarks" / "kernel_space.py")
ks = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ks)


def _rec(system, tokens, ms, ep=8, kind="uniform", model="glm-5", date="2026-12-01T01:00:00",
         tiles=None):
    rec = {"system": system, "model": model, "ep": ep, "tokens": tokens, "pass": "fwd",
           "precision": "bf16", "routing": {"kind": kind, "seed": 0}, "source": "measured",
           "date": date, "latency_ms": {"median": ms}, "hardware": {"preset": "h200-1", "gpus": 1}}
    return rec | ({"tiles": tiles} if tiles else {})


def test_best_over_gemm_by_band_and_goal():
    recs = [_rec("gemm-only", 256, 1.0), _rec("mok", 256, 1.6), _rec("mok", 256, 1.4),
            _rec("gemm-only", 4096, 2.0), _rec("mok", 4096, 2.6),
            _rec("gemm-only", 4096, 2.0, ep=16), _rec("mok", 4096, 2.2, ep=16),
            _rec("mok", 8192, 1.0)]                       # no GEMMs-alone record: not counted
    rows = ks.table(recs)
    assert rows[2] == "| glm-5 | 64-512 | 1 | 1.40 | 1.40 (EP 8, 256, uniform) | 1/1 (<= 1.5x) |"
    assert rows[3] == "| glm-5 | 1K-8K | 2 | 1.30 | 1.30 (EP 8, 4096, uniform) | 1/2 (<= 1.2x) |"
    assert len(rows) == 4


def test_only_todays_variant_and_the_latest_gemms_alone_count():
    """A wide-expert MoK record of group_m 1 (before the per-shape default), or one that ran the
    zero shared expert (no zero_shared_slot 0 in its tiles), is not today's kernel; a workload
    measured again pairs its MoK runs with its latest GEMMs-alone record."""
    m = "mixtral-8x7b"
    recs = [_rec("gemm-only", 4096, 2.0, model=m), _rec("mok", 4096, 3.0, model=m),
            _rec("mok", 4096, 2.0, model=m, tiles={"group_m": 8}),
            _rec("gemm-only", 4096, 2.5, model=m, date="2026-12-01T05:00:00"),
            _rec("mok", 4096, 3.5, model=m, tiles={"group_m": 8, "zero_shared_slot": 0})]
    rows = ks.table(recs)
    assert rows[2] == "| mixtral-8x7b | 1K-8K | 1 | 1.40 | 1.40 (EP 8, 4096, uniform) | 0/1 (<= 1.2x) |"


def test_superseded_hot_draws_are_left_out():
    """mixtral's hot records of the old draw (expert 0 had more than its share) leave the table;
    the same workload measured with today's draw (routing "draw": "model") stays."""
    m = "mixtral-8x7b"
    old = [_rec(s, 4096, ms, model=m, kind="hot", tiles={"group_m": 8, "zero_shared_slot": 0})
           for s, ms in (("gemm-only", 3.0), ("mok", 2.5))]
    for r in old:
        r["routing"]["arg"] = 0.1
    new = [{**r, "routing": {**r["routing"], "draw": "model"}, "date": "2026-12-01T14:00:00",
            "latency_ms": {"median": ms}} for r, ms in zip(old, (2.0, 3.0))]
    rows = ks.table(old + new)
    assert rows[2] == ("| mixtral-8x7b | 1K-8K | 1 | 1.50 | 1.50 (EP 8, 4096, hot:0.1) | "
                       "0/1 (<= 1.2x) |")


def test_records_of_a_model_file_are_grouped_by_its_name():
    """A record of a model file (`model` the shape dict: records.record_model) counts under the
    shape's name, never a traceback."""
    shape = {"name": "syn-h1024", "hidden": 1024, "expert_width": 512, "routed_experts": 16,
             "top_k": 2, "shared_experts": 0, "shared_width": 0}
    tiles = {"zero_shared_slot": 0}
    recs = [_rec("gemm-only", 1024, 1.0, model=shape), _rec("mok", 1024, 1.1, model=shape, tiles=tiles)]
    rows = ks.table(recs)
    assert rows[2].startswith("| syn-h1024 | 1K-8K | 1 | 1.10 |")


def test_workloads_between_the_bands_are_counted_not_dropped():
    rows = ks.table([_rec("gemm-only", 768, 1.0), _rec("mok", 768, 1.1)])
    assert rows[-1] == "(1 workload at token counts outside both bands not shown)"


def test_a_workload_measured_again_takes_the_mok_runs_of_its_latest_run():
    """Two runs (files) of one workload: the latest GEMMs-alone record pairs with the best MoK
    record of that same run, not with a faster MoK record of the other day."""
    day1 = [_rec("gemm-only", 4096, 2.0), _rec("mok", 4096, 2.2)]
    day2 = [_rec("gemm-only", 4096, 2.1, date="2026-12-02T01:00:00"),
            _rec("mok", 4096, 2.52, date="2026-12-02T01:00:00")]
    for recs, run in ((day1, "runs/a.jsonl"), (day2, "runs/b.jsonl")):
        for r in recs:
            r["_file"] = run
    rows = ks.table(day1 + day2)
    assert rows[2] == "| glm-5 | 1K-8K | 1 | 1.20 | 1.20 (EP 8, 4096, uniform) | 1/1 (<= 1.2x) |"
    only_gemm = [dict(day2[0])]          # the latest run has no MoK record: not counted
    assert len(ks.table(day1 + only_gemm)) == 2
