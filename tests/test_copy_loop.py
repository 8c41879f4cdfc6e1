"""The comm copy loop a record ran (records.record_copy_loop) and what the model charges for it
(analytic.copy_load): today's pull copies load their indices ahead, the old loop and the push
lanes wait for them a chunk at a time (session 39, mok_kernels/NOTES.md)."""

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
    ({"pass": "bwd"}, "ahead"),                                # the backward's own loops
    ({"precision": "fp8", "tiles": {"fp8_kernel": "gluon"}}, "ahead"),   # the Gluon pass's
    ({"system": "nccl-torch"}, "ahead"),
    ({"source": "published"}, "ahead"),
])
def test_record_copy_loop(changes, loop):
    assert record_copy_loop(record(**changes)) == loop


def test_the_two_loops_are_two_workloads():
    old, new = record(), record(date="2026-12-04T01:07:07+00:00")
    assert workload_key(old) != workload_key(new)
    assert workload_key(old)[:-2] == workload_key(new)[:-2]


def scenario(loop: str, **kw) -> Scenario:
    return Scenario(load_hardware("h200-1"), load_model("qwen3-30b-a3b"), 8, 4096,
                    copy_loop=loop, **kw)


def test_copy_load_only_off_the_ahead_pull_copies():
    p = H200.with_values(serial_copy_scale=0.75)
    assert copy_load(scenario("ahead"), p, pull=True) == 1.0
    slow = copy_load(scenario("ahead"), p, pull=False)        # push lanes: step by step
    assert slow == pytest.approx(1 / 0.75)
    assert copy_load(scenario("serial"), p, pull=True) == slow
    assert copy_load(scenario("ahead", pass_="bwd"), p, pull=True) == slow
    assert copy_load(scenario("serial"), H200.with_values(serial_copy_scale=1.0), pull=True) == 1.0


def test_copy_loop_rejected_when_unknown():
    with pytest.raises(Exception, match="copy_loop"):
        scenario("sideways")


@pytest.mark.parametrize("engine", ["analytic", "sim"])
def test_the_old_loop_is_slower_where_pull_copies_bound_the_pass(engine):
    p = H200.with_values(serial_copy_scale=0.75)
    pull = Config(dispatch="pull", combine="pull", minibatch=4096, comm_sms=8, capacity=1.0)
    push = Config(dispatch="push", combine="push", minibatch=4096, comm_sms=8, capacity=1.0)
    ms = {(loop, c.dispatch): predict(scenario(loop), c, params=p, engine=engine).latency_ms
          for loop in ("ahead", "serial") for c in (pull, push)}
    assert ms[("serial", "pull")] > 1.05 * ms[("ahead", "pull")]
    # push lanes copy step by step in both kernels: no difference
    assert ms[("serial", "push")] == pytest.approx(ms[("ahead", "push")], rel=1e-9)


def test_no_wait_means_the_loops_read_alike():
    p = H200.with_values(serial_copy_scale=1.0)
    c = Config(dispatch="pull", combine="pull", minibatch=4096, comm_sms=8, capacity=1.0)
    a = predict(scenario("ahead"), c, params=p).latency_ms
    assert predict(scenario("serial"), c, params=p).latency_ms == a
