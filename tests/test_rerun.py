"""Runs measured twice, each scored as the other's prediction (calibration.rerun)."""

import json

from calibration.rerun import main, pairs, report


def _rec(i, mb=4096, ms=2.0, date="2026-12-01T03:00:00+00:00", tiles=None, system="mok"):
    return {"schema": "mok-run/1", "id": f"r{i}", "date": date, "system": system,
            "model": "glm-5", "ep": 8, "hardware": {"preset": "h200-1"}, "software": {},
            "emulated_peers": True, "tokens": 1024,
            "routing": {"kind": "uniform", "seed": 0}, "pass": "fwd", "precision": "bf16",
            "source": "measured", "latency_ms": {"median": ms}, "tiles": tiles or {},
            "config": {"dispatch": "pull", "combine": "push", "minibatch": mb, "comm_sms": 32,
                       "macrobatch": 131072, "capacity": 1.0}}


def test_runs_pair_by_workload_knobs_and_tiles_and_the_latest_stands():
    first = [_rec(0, ms=2.0), _rec(1, ms=2.2, date="2026-12-01T05:00:00+00:00"),   # re-measured
             _rec(2, mb=2048, ms=3.0), _rec(3, mb=1024, tiles={"group_m": 8})]
    second = [_rec(10, ms=2.1), _rec(11, mb=2048, ms=3.3), _rec(12, mb=1024),       # group_m 1
              _rec(13, mb=512)]                                                      # not in first
    got = [(a["id"], b["id"]) for a, b in pairs(first, second)]
    assert got == [("r1", "r10"), ("r2", "r11")]


def test_report_scores_each_side_against_the_other():
    first = [_rec(0, ms=2.0), _rec(1, mb=2048, ms=3.0), _rec(2, mb=1024, ms=4.0)]
    second = [_rec(10, ms=2.2), _rec(11, mb=2048, ms=3.3), _rec(12, mb=1024, ms=4.4)]
    lines = report(first, second)
    assert "3 runs measured twice; second / first median 1.100" in lines[0]
    assert "MAPE   9.1%" in lines[1] and "Spearman 1.00" in lines[1]      # 2.0 for 2.2: -9.1%
    assert "MAPE  10.0%" in lines[2] and "regret mean 0.0%" in lines[2]
    assert any(line.startswith("  model of second (3 runs)") for line in lines)


def test_cli_refuses_missing_files_and_runs_measured_once(tmp_path, capsys):
    assert main(["--first", "nope.jsonl", "--second", "nope2.jsonl"]) == 2
    assert "nope.jsonl" in capsys.readouterr().err
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text(json.dumps(_rec(0)) + "\n")
    b.write_text(json.dumps(_rec(1, mb=512)) + "\n")
    assert main(["--first", str(a), "--second", str(b)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("python -m calibration.rerun: error: no run was measured on both")
    assert err.count("\n") == 1


def test_a_hot_run_of_the_old_draw_is_another_run():
    """Hot records written before the model's draw (no "draw": "model") routed otherwise."""
    old = _rec(0) | {"routing": {"kind": "hot", "arg": 0.1, "seed": 0}}
    new = _rec(1) | {"routing": {"kind": "hot", "arg": 0.1, "seed": 0, "draw": "model"}}
    assert pairs([old], [new]) == []
    assert len(pairs([new | {"id": "r2"}], [new])) == 1


def test_repeated_runs_in_one_set_give_the_ceiling_and_report_space_prints_it():
    from calibration.report_space import render
    from calibration.rerun import ceiling, repeated
    later = "2026-12-02T03:00:00+00:00"
    recs = [_rec(0, ms=2.0), _rec(1, mb=2048, ms=3.0), _rec(2, mb=1024, ms=4.0),
            _rec(3, ms=2.0, date=later), _rec(4, mb=2048, ms=3.3, date=later),
            _rec(5, mb=1024, ms=3.6, date=later), _rec(6, mb=512, ms=9.0)]   # 512: measured once
    both = repeated(recs)
    assert sorted((a["id"], b["id"]) for a, b in both) == [("r0", "r3"), ("r1", "r4"),
                                                          ("r2", "r5")]
    c = ceiling(both)
    assert c["n"] == 3 and abs(c["max_ape"] - 0.4 / 3.6) < 1e-12
    assert c["regret_max"] == 0.0 and c["spearman_groups"] == 1     # picks 4096: 2.0, the best
    assert ceiling([]) is None
    doc = {"records": 7, "workloads": 1, "files": ["x"], "left_out": {}, "summary": [],
           "folds": [], "seconds": 1.0, "rerun": c}
    assert "re-run ceiling: 3 MoK runs measured twice among the inputs" in render(doc)
