"""Bad input found by session 48's fuzzing pass: `calibration.register --plan` lines of the wrong
types or breaking the grid's rules, repeated, or naming another system or hardware;
`calibration.registered` prediction lines of the wrong types, dates compared as text across time
zones, and predictions beyond a plausible time. Each case is one line naming the value and the
rule, exit status 2; valid input still works."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from calibration import register, registered

REPO = Path(__file__).resolve().parents[1]
CONFIG = {"dispatch": "pull", "combine": "push", "minibatch": 4096, "comm_sms": 32,
          "macrobatch": 131072, "capacity": 1.0}
PLAN = {"model": "kimi-k2", "ep": 8, "tokens": 1024, "routing": {"kind": "uniform", "seed": 0},
        "config": CONFIG}
ROUTING = {"kind": "zipf", "seed": 0, "arg": 1.2, "order": "model"}
PRED = {"engine": "analytic", "system": "mok", "model": "glm-5", "ep": 8, "tokens": 1024,
        "routing": ROUTING, "pass": "fwd", "precision": "bf16", "config": CONFIG,
        "hardware": "h200-1", "predicted_ms": 1.0, "registered": "2026-12-05T04:05:14+00:00"}


def _run(rid="r0", date="2026-12-05T05:00:00+00:00", **change) -> dict:
    """A measured run record of PRED's run."""
    return {"schema": "mok-run/1", "id": rid, "date": date,
            "hardware": {"preset": "h200-1", "gpus": 1, "sms": 132}, "software": {},
            "system": "mok", "model": "glm-5", "ep": 8, "emulated_peers": True, "tokens": 1024,
            "pass": "fwd", "precision": "bf16", "config": CONFIG, "routing": ROUTING,
            "latency_ms": {"median": 2.0}, "source": "measured", **change}


def _lines(path: Path, *objs) -> str:
    path.write_text("".join(o if isinstance(o, str) else json.dumps(o) + "\n" for o in objs))
    return str(path)


def _refused(rc: int, capsys, *words: str) -> str:
    err = capsys.readouterr().err
    assert rc == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert all(w in err for w in words), err
    return err


# ---- A, B. register --plan: each line held to the record's types and the grid's rules ----

PLAN_CASES = [
    ({"config": {"dispatch": "push"}}, "config={'dispatch': 'push'} lacks combine, minibatch"),
    ({"config": {"capacity": "1"}}, "config.capacity='1' must be a number in (0, 1]"),
    ({"config": {**CONFIG, "minibatch": "x"}}, "config.minibatch='x' must be an integer"),
    ({"config": {**CONFIG, "macrobatch": 10}}, "--macrobatch 10 with --minibatch 4096"),
    ({"tiles": {"list_lag": "two"}}, "tiles.list_lag='two' must be an integer"),
    ({"tiles": {"list_lag": "2"}}, "tiles.list_lag='2' must be an integer"),
    ({"tiles": {"list_lag": 2.7}}, "tiles.list_lag=2.7 must be an integer"),
    ({"tiles": {"list_lag": True}}, "tiles.list_lag=True must be an integer"),
    ({"tiles": {"list_lag": 9}}, "--list-lag 9 must be at most 8"),
    ({"tiles": {"list_lag": 2}, "pass": "bwd"}, "--list-lag 2 with --pass bwd"),
    ({"tiles": {"zero_shared_slot": "x"}}, "tiles.zero_shared_slot='x' must be an integer"),
    ({"routing": {"kind": "uniform", "seed": "x"}}, "routing.seed='x' must be an integer from 0 to"),
    ({"ep": True}, "--ep True must be an integer >= 1"),
    ({"ep": 5}, "--ep 5: kimi-k2's 384 experts do not divide over 5 ranks"),
    ({"model": 5}, "field 'model'=5 has the wrong type"),
    ({"pass": "bwd", "precision": "fp8"}, "--pass bwd with --precision fp8: the backward"),
    ({"precision": "mxfp8"}, "--precision 'mxfp8': allowed bf16, fp8"),
    ({"system": "nccl-torch"}, "system='nccl-torch': a plan holds MoK runs"),
    ({"hardware": {"preset": "h100-1"}}, "hardware.preset='h100-1': this registration predicts "
                                         "h200-1"),
]


@pytest.mark.parametrize("change, words", PLAN_CASES, ids=[w[:40] for _, w in PLAN_CASES])
def test_a_bad_plan_line_is_one_line(change, words, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(REPO)
    plan, out = tmp_path / "plan.jsonl", tmp_path / "r.jsonl"
    _lines(plan, PLAN | change)
    rc = register.main(["--plan", str(plan), "--out", str(out)])
    _refused(rc, capsys, f"--plan {plan}:1: ", words)
    assert not out.exists()


@pytest.mark.parametrize("lines, words", [
    ([json.dumps(PLAN) + "\n", "\n", json.dumps(PLAN) + "\n"],
     "plan.jsonl:3: the same planned record as line 1"),
    ([PLAN, PLAN | {"tokens": 2048}, {**PLAN, "pass": "fwd", "system": "mok"}],
     "plan.jsonl:3: the same planned record as line 1"),
    ([json.dumps(PLAN).replace('"capacity": 1.0', '"capacity": NaN') + "\n"],
     "plan.jsonl:1: NaN is not a JSON number"),
])
def test_a_repeated_or_non_finite_plan_line_is_refused(lines, words, tmp_path, capsys,
                                                        monkeypatch):
    monkeypatch.chdir(REPO)
    plan, out = tmp_path / "plan.jsonl", tmp_path / "r.jsonl"
    _lines(plan, *lines)
    _refused(register.main(["--plan", str(plan), "--out", str(out)]), capsys, "--plan ", words)
    assert not out.exists()


def test_a_valid_plan_still_registers(tmp_path, monkeypatch):
    """A line naming the registered system and hardware itself, one at list lag 2, one backward:
    each predicted by both engines."""
    monkeypatch.chdir(REPO)
    plan, out = tmp_path / "plan.jsonl", tmp_path / "r.jsonl"
    _lines(plan, PLAN | {"system": "mok", "hardware": {"preset": "h200-1"}},
           PLAN | {"tiles": {"list_lag": 2}}, PLAN | {"pass": "bwd"})
    assert register.main(["--plan", str(plan), "--out", str(out)]) == 0
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(rows) == 6 and {r["hardware"] for r in rows} == {"h200-1"}
    assert [r.get("tiles") for r in rows if r["engine"] == "analytic"] == [None, {"list_lag": 2},
                                                                           None]
    assert all(0 < r["predicted_ms"] < 1e6 for r in rows)


# ---- C, D, E. registered: prediction lines' types, dates as instants, plausible times ----

PRED_CASES = [
    ({"routing": {"seed": 0}}, "routing={'seed': 0} must be an object naming its kind"),
    ({"routing": {**ROUTING, "kind": ["zipf"]}}, "must be an object naming its kind"),
    ({"routing": {**ROUTING, "arg": [1.2]}}, "routing.arg=[1.2] must be a number"),
    ({"pass": ["fwd"]}, "field 'pass'=['fwd'] has the wrong type"),
    ({"precision": {"bf16": 1}}, "field 'precision'={'bf16': 1} has the wrong type"),
    ({"pass": "back"}, "pass 'back' is not one of"),
    ({"config": {**CONFIG, "minibatch": [4096]}}, "config.minibatch=[4096] must be an integer"),
    ({"config": {**CONFIG, "dispatch": {}}}, "config.dispatch={} must be 'pull' or 'push'"),
    ({"tiles": {"list_lag": "x"}}, "tiles.list_lag='x' must be an integer"),
    ({"tiles": {"list_lag": [2]}}, "tiles.list_lag=[2] must be an integer"),
    ({"pass": "bwd", "tiles": {"bn_a": "x"}}, "tiles.bn_a='x' must be an integer"),
    ({"registered": "yesterday"}, "registered 'yesterday' must be an ISO 8601 date and time "
                                  "with its time zone"),
    ({"registered": "2026-12-05T04:05:14"}, "registered '2026-12-05T04:05:14' must be an ISO 8601"),
    ({"predicted_ms": 1e308}, "predicted_ms=1e+308 must be a time in [0.0001, 1e+06] ms"),
    ({"predicted_ms": 1e-9}, "predicted_ms=1e-09 must be a time in [0.0001, 1e+06] ms"),
]


@pytest.mark.parametrize("change, words", PRED_CASES, ids=[w[:40] for _, w in PRED_CASES])
def test_a_bad_prediction_line_is_one_line(change, words, tmp_path, capsys):
    pred = _lines(tmp_path / "reg.jsonl", PRED | change)
    runs = _lines(tmp_path / "runs.jsonl", _run())
    _refused(registered.main([pred, runs]), capsys, "reg.jsonl:1: ", words)


@pytest.mark.parametrize("change, words", [
    ({"date": "2026-12-05T10:00:00"}, "date '2026-12-05T10:00:00' must be an ISO 8601 date and "
                                      "time with its time zone"),
    ({"date": "2026-12-05"}, "date '2026-12-05' must be an ISO 8601 date and time with its time"),
    ({"routing": {"kind": "zipf", "arg": [1]}}, "routing.arg=[1] must be a number or a "
                                                "routing file's path"),
    ({"routing": {"kind": "uniform", "arg": [1]}}, "routing.arg is not a key of a uniform routing"),
])
def test_a_record_the_report_cannot_read_is_one_line(change, words, tmp_path, capsys):
    uniform = {"kind": "uniform", "seed": 0}
    pred = _lines(tmp_path / "reg.jsonl", PRED | {"routing": uniform if "routing" in change
                                                  else ROUTING})
    runs = _lines(tmp_path / "runs.jsonl", _run(**change))
    _refused(registered.main([pred, runs]), capsys, "runs.jsonl:1: ", words)


def test_made_after_the_registration_compares_instants(tmp_path, capsys):
    """Registered 04:05:14 UTC: 10:00+09:00 (01:00 UTC) came before it, 03:00-05:00 (08:00 UTC)
    after; text comparison had them the other way round."""
    before = _run("early", date="2026-12-05T10:00:00+09:00")
    after = _run("late", date="2026-12-05T03:00:00-05:00", latency_ms={"median": 4.0})
    assert [r["id"] for _, r in registered.match([PRED], [before, after])] == ["late"]
    pred = _lines(tmp_path / "reg.jsonl", PRED, PRED | {"engine": "sim", "predicted_ms": 2.0})
    runs = _lines(tmp_path / "runs.jsonl", before, after)
    assert registered.main([pred, runs]) == 0
    out = capsys.readouterr().out
    assert "analytic mok       : n   1 MAPE  75.0%" in out, out
    assert "sim      mok       : n   1 MAPE  50.0%" in out, out
    assert registered.match([PRED], [before]) == []
