"""calibration.report_auto: the automatic pick against the best swept setting, and a pick told
the routing (`mok bench --auto-hint`) in a column of its own, never mixed with the default."""

from calibration import report_auto


def _rec(ms: float, system: str = "mok", minibatch: int = 4096, comm_sms: int = 32,
         auto: dict | None = None) -> dict:
    rec = {"system": system, "model": "kimi-k2", "ep": 4, "tokens": 512, "pass": "fwd",
           "precision": "bf16", "routing": {"kind": "hot", "arg": 0.1},
           "latency_ms": {"median": ms},
           "config": {"dispatch": "pull", "combine": "push", "minibatch": minibatch,
                      "comm_sms": comm_sms, "capacity": 0.5}}
    if auto is not None:
        rec["auto"] = auto
    return rec


def test_a_told_pick_is_reported_beside_the_default_pick():
    recs = [_rec(0.30, "gemm-only"), _rec(1.00), _rec(1.10, comm_sms=16),
            _rec(1.20, minibatch=3072, comm_sms=60, auto={"knob_source": "tuner"}),
            _rec(1.02, comm_sms=64, auto={"knob_source": "tuner for routing hot:0.1",
                                          "knob_routing": "hot:0.1"})]
    (row,) = report_auto.rows(recs)
    assert row["pick_ms"] == 1.20 and row["pick_over_best"] == 1.20     # the default's, not min
    assert row["told_ms"] == 1.02 and abs(row["told_over_best"] - 1.02) < 1e-12
    assert row["swept"] == 2 and row["best_ms"] == 1.00
    (plain,) = report_auto.rows(recs[:4])
    assert plain["told_ms"] is None and plain["pick_ms"] == 1.20


def test_a_robust_pick_is_the_default_and_a_pick_told_uniform_is_told():
    """Since session 44 every pick names its routing: "robust" (the layer's default) is the
    pick, a pick told "uniform" (--auto-hint on a uniform workload) goes to the told column."""
    recs = [_rec(1.00), _rec(1.10, comm_sms=16),
            _rec(1.05, comm_sms=8, auto={"knob_source": "tuner", "knob_routing": "robust"}),
            _rec(1.01, comm_sms=60, auto={"knob_source": "tuner", "knob_routing": "uniform"})]
    (row,) = report_auto.rows(recs)
    assert row["pick_ms"] == 1.05 and row["told_ms"] == 1.01 and row["swept"] == 2


def test_the_picks_are_summed_up_per_routing_where_several_are_reported():
    def rows(kind, pick, told):
        return {"routing": kind, "pick_over_best": pick, "told_over_best": told}

    lines = report_auto.by_routing([rows("hot", 1.05, 1.01), rows("hot", 1.00, None),
                                    rows("uniform", 0.99, 1.02)])
    assert lines == ["  hot: pick 1.000-1.050 over 2 workloads, 1 within 3%; told 1.010-1.010, "
                     "1 within 3%",
                     "  uniform: pick 0.990-0.990 over 1 workloads, 1 within 3%; told "
                     "1.020-1.020, 1 within 3%"]
    assert report_auto.by_routing([rows("hot", 1.0, None)]) == []
