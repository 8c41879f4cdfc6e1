"""The comm copy loop a record ran (records.record_copy_loop) and what the model charges for it
(analytic.copy_load): the "ahead" pull copies load their indices ahead (session 39), today's
"pipe" ones keep two column steps' loads in flight too (session 40), the "runs" ones copy the
emulated push lanes' runs of each row tile (session 41), today's "shares" ones split a pair's
rows evenly over its lanes (session 63), the "serial" loop and the push lanes
wait for the indices a chunk at a time (mok_kernels/NOTES.md)."""

from dataclasses import replace

import pytest

from mok_model.analytic import copy_load
from mok_model.params import PARAMS_DIR, read_params
from mok_model.predict import predict
from mok_model.presets import load_hardware, load_model
from mok_model.records import record_copy_loop, workload_key
from mok_model.scenario import Config, Scenario

H200 = read_params(PARAMS_DIR / "h200-1.json")


def record(**changes) -> dict:
    rec = {"system": "mok", "pass": "fwd", "precision": "bf16", "source": "measured",
           "date": "2026-12-03T20:00:00+00:00", "hardware": {"preset": "h200-1"},
           "model": "qwen3-30b-a3b", "ep": 8, "tokens": 4096,
           "routing": {"kind": "uniform", "seed": 0}, "config": {}}
    rec.update(changes)
    return rec


@pytest.mark.parametrize("changes,loop", [
    ({}, "serial"),                                            # the day before: the old loop
    ({"date": "2026-12-04T00:49:59+00:00"}, "serial"),
    ({"date": "2026-12-04T01:07:07+00:00"}, "ahead"),          # session 39's runs
    ({"date": "2026-12-04T02:00:00"}, "ahead"),                # no zone: read as UTC
    ({"date": "2026-12-04T08:59:59+00:00"}, "ahead"),
    ({"date": "2026-12-04T09:00:00+00:00"}, "pipe"),           # session 40's kernel on
    ({"date": "2026-12-04T11:00:00+02:00"}, "pipe"),           # another zone: 09:00 UTC
    ({"date": "2026-12-04T10:59:59+02:00"}, "ahead"),
    ({"date": "2026-12-04T12:33:59+00:00"}, "pipe"),
    ({"date": "2026-12-04T12:34:00+00:00"}, "runs"),           # session 41's push lanes on
    ({"date": "2026-12-05T01:00:00+00:00"}, "runs"),
    ({"date": "2026-12-06T10:29:55+00:00"}, "runs"),
    ({"date": "2026-12-06T10:29:56+00:00"}, "shares"),         # session 63's push lanes on
    ({"date": "not a date"}, "shares"),
    ({"pass": "bwd"}, "shares"),                               # the backward's own loops
    ({"precision": "fp8", "tiles": {"fp8_kernel": "gluon"}}, "shares"),   # the Gluon pass's
    ({"system": "nccl-torch"}, "shares"),
    ({"source": "published"}, "shares"),
])
def test_record_copy_loop(changes, loop):
    assert record_copy_loop(record(**changes)) == loop


def test_the_five_loops_are_five_workloads():
    keys = [workload_key(record(date=d)) for d in
            ("2026-12-03T20:00:00+00:00", "2026-12-04T01:07:07+00:00", "2026-12-04T10:00:00+00:00",
             "2026-12-04T13:00:00+00:00", "2026-12-06T11:00:00+00:00")]
    assert len(set(keys)) == 5
    assert len({k[:-2] for k in keys}) == 1


def scenario(loop: str, **kw) -> Scenario:
    return Scenario(load_hardware("h200-1"), load_model("qwen3-30b-a3b"), 8, 4096,
                    copy_loop=loop, **kw)


def test_copy_load_only_off_the_ahead_pull_copies():
    p = H200.with_values(serial_copy_scale=0.75, pipe_copy_scale=1.25)
    assert copy_load(scenario("ahead"), p, pull=True) == 1.0
    slow = copy_load(scenario("ahead"), p, pull=False)        # push lanes: step by step
    assert slow == pytest.approx(1 / 0.75)
    assert copy_load(scenario("serial"), p, pull=True) == slow
    assert copy_load(scenario("ahead", pass_="bwd"), p, pull=True) == slow
    assert copy_load(scenario("serial"), H200.with_values(serial_copy_scale=1.0), pull=True) == 1.0
    # today's pull copies: faster where a row has two column steps or more (H 2,048: two)
    assert copy_load(scenario("pipe"), p, pull=True) == pytest.approx(1 / 1.25)
    assert copy_load(scenario("pipe"), p, pull=False) == slow   # push lanes: as before
    assert copy_load(scenario("pipe", pass_="bwd"), p, pull=True) == slow
    for side in (True, False):      # runs and shares change which rows a push lane visits, not
        for loop in ("runs", "shares"):                                             # its copy
            assert copy_load(scenario(loop), p, pull=side) == copy_load(scenario("pipe"), p,
                                                                        pull=side)


def test_one_column_step_gains_nothing_from_two_in_flight():
    p = H200.with_values(pipe_copy_scale=1.25)
    base = scenario("pipe")
    for hidden, load in ((1024, 1.0), (768, 1.0), (1025, 1 / 1.25), (4096, 1 / 1.25)):
        scn = Scenario(base.hardware, replace(base.model, hidden=hidden), 8, 4096, copy_loop="pipe")
        assert copy_load(scn, p, pull=True) == pytest.approx(load)


def test_todays_loop_is_the_default_and_measured_on_h200():
    assert Scenario(load_hardware("h200-1"), load_model("qwen3-30b-a3b"), 8, 4096).copy_loop == "shares"
    assert H200["pipe_copy_scale"] == 1.25
    assert "logs_s40/pipe/pipe.jsonl" in H200.sources["pipe_copy_scale"]


def test_copy_loop_rejected_when_unknown():
    with pytest.raises(Exception, match="copy_loop"):
        scenario("sideways")


@pytest.mark.parametrize("engine", ["analytic", "sim"])
@pytest.mark.parametrize("loop,scale,ratio", [("serial", {"serial_copy_scale": 0.75}, 1.05),
                                              ("pipe", {"pipe_copy_scale": 1.25}, 1 / 1.05)])
def test_a_loop_differs_from_ahead_only_where_pull_copies_bound_the_pass(engine, loop, scale, ratio):
    """The old loop slower, today's faster than "ahead" at 8 comm SMs; the push lanes copy step by
    step in every kernel: no difference there."""
    p = H200.with_values(**scale)
    pull = Config(dispatch="pull", combine="pull", minibatch=4096, comm_sms=8, capacity=1.0)
    push = Config(dispatch="push", combine="push", minibatch=4096, comm_sms=8, capacity=1.0)
    ms = {(lp, c.dispatch): predict(scenario(lp), c, params=p, engine=engine).latency_ms
          for lp in ("ahead", loop) for c in (pull, push)}
    assert (ms[(loop, "pull")] > ratio * ms[("ahead", "pull")]) == (ratio > 1)
    assert (ms[(loop, "pull")] < ratio * ms[("ahead", "pull")]) == (ratio < 1)
    assert ms[(loop, "push")] == pytest.approx(ms[("ahead", "push")], rel=1e-9)


@pytest.mark.parametrize("engine", ["analytic", "sim"])
def test_runs_change_only_the_emulated_push_dispatch(engine):
    """Today's loop ("runs") reads as "pipe" except where emulated push lanes scanned chunks:
    there it is faster."""
    p = H200.with_values(push_scan_us=0.9)
    ms = {(lp, d): predict(scenario(lp), Config(dispatch=d, combine="pull", minibatch=4096,
                                                comm_sms=8, capacity=1.0),
                           params=p, engine=engine).latency_ms
          for lp in ("pipe", "runs") for d in ("pull", "push")}
    assert ms[("runs", "pull")] == pytest.approx(ms[("pipe", "pull")], rel=1e-9)
    assert ms[("runs", "push")] < ms[("pipe", "push")]


def test_no_wait_means_the_loops_read_alike():
    p = H200.with_values(serial_copy_scale=1.0)
    c = Config(dispatch="pull", combine="pull", minibatch=4096, comm_sms=8, capacity=1.0)
    a = predict(scenario("ahead"), c, params=p).latency_ms
    assert predict(scenario("serial"), c, params=p).latency_ms == a


@pytest.mark.parametrize("dates,serial", [
    (("2026-12-03T20:00:00+00:00",), False),                            # one loop
    (("2026-12-03T20:00:00+00:00", "2026-12-04T01:00:00+00:00"), True),
    (("2026-12-04T01:00:00+00:00", "2026-12-04T10:00:00+00:00"), False),
    (("2026-12-03T20:00:00+00:00", "2026-12-04T01:00:00+00:00", "2026-12-04T10:00:00+00:00"),
     True),
    (("2026-12-03T20:00:00+00:00", "2026-12-04T10:00:00+00:00"), True),
    (("2026-12-04T01:00:00+00:00", "2026-12-04T13:00:00+00:00"), False),   # ahead, runs
])
def test_calibrate_frees_serial_scale_beside_a_newer_loop_and_never_the_measured_pipe(dates,
                                                                                     serial):
    """serial_copy_scale is fitted where the oldest loop's records sit beside a newer loop's;
    pipe_copy_scale is the A/B's measurement and stays (session 41: freed, the fit traded it
    for the copy rate)."""
    from calibration.cli import default_free
    recs = [record(date=d, config={"comm_sms": cs}) for d in dates for cs in (8, 32)]
    free = default_free(recs, set())
    assert ("serial_copy_scale" in free) == serial
    assert "pipe_copy_scale" not in free


def test_calibrate_frees_how_compute_scales_with_its_sms_but_not_the_joining_share():
    """Records varying the comm SMs free sm_scaling; comm_join_share stays at its design value
    (every comm program joins): h100-1's fitted 0.914 put a pass's GEMMs on 126.5 SMs, one
    short of its items' single wave, and read it 36% slow (session 73)."""
    from calibration.cli import default_free
    recs = [record(date="2026-12-04T13:00:00+00:00", config={"comm_sms": cs}) for cs in (8, 32)]
    free = default_free(recs, set())
    assert "sm_scaling" in free and "comm_join_share" not in free
    assert "sm_scaling" not in default_free(recs[:1], set())


def test_calibrate_frees_the_push_pass_time_where_forward_runs_mix_the_dispatches():
    """push_pass_us (analytic.push_pass) is freed where forward runs time both push and pull
    dispatch, never from one dispatch alone or from backward runs."""
    from calibration.cli import default_free
    both = [record(config={"dispatch": d, "comm_sms": 32}) for d in ("push", "pull")]
    assert "push_pass_us" in default_free(both, set())
    assert "push_pass_us" not in default_free(both[:1], set())
    assert "push_pass_us" not in default_free([{**r, "pass": "bwd"} for r in both], set())
