"""Registered predictions meet the records of their runs (calibration.registered)."""

from calibration.registered import main, match, summary


def _rec(i, system="mok", mb=4096, date="2026-12-01T03:00:00+00:00", ms=2.0, ep=8):
    return {"id": f"r{i}", "date": date, "system": system, "model": "glm-5", "ep": ep,
            "hardware": {"preset": "h200-1"},
            "tokens": 1024, "routing": {"kind": "zipf", "seed": 0, "arg": 1.2}, "pass": "fwd",
            "precision": "bf16", "latency_ms": {"median": ms},
            "config": {"dispatch": "pull", "combine": "push", "minibatch": mb, "comm_sms": 32}}


def _pred(system="mok", mb=4096, ms=1.0, ep=8):
    return {"engine": "analytic", "system": system, "model": "glm-5", "ep": ep, "tokens": 1024,
            "routing": {"kind": "zipf", "seed": 0, "arg": 1.2}, "predicted_ms": ms,
            "registered": "2026-12-01T02:00:00+00:00",
            "config": {"dispatch": "pull", "combine": "push", "minibatch": mb, "comm_sms": 32}
            if system == "mok" else {}}


def test_match_by_run_and_date_only():
    runs = [_rec(0), _rec(1, mb=2048, ms=3.0), _rec(2, date="2026-11-30T00:00:00+00:00", mb=1024),
            _rec(3, system="nccl-torch"), _rec(4, ep=16)]
    pairs = match([_pred(), _pred(mb=2048, ms=1.5), _pred(mb=1024), _pred(system="nccl-torch"),
                   _pred(mb=512)], runs)
    assert [(p["config"].get("minibatch"), r["id"]) for p, r in pairs] == \
        [(4096, "r0"), (2048, "r1"), (None, "r3")]        # the 2026-11-30 run predates it
    assert match([_pred()], runs + [_rec(5)]) == []       # measured twice: ambiguous, left out
    line = summary(pairs[:2], "mok")
    assert "n   2 MAPE  50.0%" in line and "regret mean 0.0%" in line   # picks 4096: 2.0 < 3.0


def test_a_prediction_meets_the_run_of_its_work_list_lag():
    """Runs of one configuration at several work-list lags (tiles list_lag, absent: 1) are
    different runs; a prediction meets the one of its own lag."""
    lagged = _rec(1, ms=1.5) | {"tiles": {"list_lag": 2}}
    pairs = match([_pred(), _pred(ms=1.2) | {"tiles": {"list_lag": 2}}], [_rec(0), lagged])
    assert [(p["predicted_ms"], r["id"]) for p, r in pairs] == [(1.0, "r0"), (1.2, "r1")]


def test_cli_refuses_missing_file(capsys):
    assert main(["nope.jsonl", "also-nope.jsonl"]) == 2
    assert "nope.jsonl" in capsys.readouterr().err


def test_models_given_by_shape_match_and_print_their_name(tmp_path, capsys):
    """A model file's runs carry its shape dict (records.record_model); registrations and
    records meet by that shape, and --by model prints its name."""
    import json

    from calibration.registered import report
    from mok_model.records import record_model
    f = tmp_path / "syn.toml"
    f.write_text('name = "syn"\nhidden = 1024\nexpert_width = 384\nrouted_experts = 16\n'
                 'top_k = 2\n')
    shape = record_model(str(f))
    assert shape["name"] == "syn" and shape["hidden"] == 1024 and shape["shared_experts"] == 0
    assert record_model("glm-5") == "glm-5" and record_model("kimi-k2.7-code") == "kimi-k2.7-code"
    other = dict(shape, expert_width=512)                # another shape, same name
    runs = [_rec(0) | {"model": shape}, _rec(1) | {"model": other, "id": "r1"}]
    pairs = match([_pred() | {"model": shape}], runs)
    assert [r["id"] for _, r in pairs] == ["r0"]
    reg = tmp_path / "reg.jsonl"
    reg.write_text(json.dumps(_pred() | {"model": shape}) + "\n")
    report([str(reg)], runs, ["model"])
    assert "model syn " in capsys.readouterr().out


def test_report_unseen_refuses_empty_files_and_reports_regret(tmp_path, capsys):
    from calibration.report_unseen import figures, main
    f = tmp_path / "none.jsonl"
    f.write_text("")
    assert main([str(f)]) == 2 and "no run records" in capsys.readouterr().err
    recs = [_rec(0, ms=2.0), _rec(1, mb=2048, ms=3.0)]
    line = figures(recs, [1.0, 1.5])             # picks 4096 (predicted faster): the best
    assert "MAPE  50.0%" in line and "regret mean 0.0%" in line
    assert "regret mean 50.0%" in figures(recs, [1.5, 1.0])   # picks 2048: 3.0 against 2.0


def test_by_a_knob_reads_the_records_config(tmp_path, capsys):
    """--by minibatch (a knob) groups by the record's config, one line per value; a name that
    is neither a record field nor a knob is refused."""
    import json

    from calibration.registered import report
    reg = tmp_path / "reg.jsonl"
    reg.write_text(json.dumps(_pred()) + "\n" + json.dumps(_pred(mb=2048, ms=1.5)) + "\n")
    report([str(reg)], [_rec(0), _rec(1, mb=2048, ms=3.0)], ["minibatch"])
    out = capsys.readouterr().out
    assert "minibatch 2048 " in out and "minibatch 4096 " in out
    assert main([str(reg), str(reg), "--by", "colour"]) == 2
    assert "comm_sms" in capsys.readouterr().err


def test_worst_lists_the_predictions_furthest_from_their_runs(tmp_path, capsys):
    """--worst N prints the N pairs with the largest relative error, largest first, each with its
    signed error, workload, knobs and both times; --worst -1 is refused with one line."""
    import json

    from calibration.registered import worst_lines
    preds = [_pred(ms=1.9), _pred(mb=2048, ms=1.5), _pred(mb=1024, ms=2.4)]
    runs = [_rec(0, ms=2.0), _rec(1, mb=2048, ms=3.0), _rec(2, mb=1024, ms=2.0)]
    lines = worst_lines(match(preds, runs), 2)
    assert len(lines) == 2
    assert "-50.0%" in lines[0] and "minibatch 2048" in lines[0]
    assert "predicted 1.500 ms, measured 3.000 ms" in lines[0]
    assert "+20.0%" in lines[1] and "glm-5 EP 8 x 1024 zipf:1.2" in lines[1]
    reg = tmp_path / "reg.jsonl"
    reg.write_text("".join(json.dumps(p) + "\n" for p in preds))
    run_file = tmp_path / "runs.jsonl"
    run_file.write_text("".join(json.dumps(r) + "\n" for r in runs))
    assert main([str(reg), str(run_file), "--worst", "-1"]) == 2
    err = capsys.readouterr().err
    assert "--worst" in err and "Traceback" not in err
