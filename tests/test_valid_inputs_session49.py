"""Valid inputs that session 49's new checks must keep taking (a helper's pass over what the
project itself passes: the device scripts' `mok bench` / sweep command lines, tile-sweep
candidates, committed records and parameters files, random `mok predict` / `tune` / `simulate`
questions and knob API calls, each compared with the code before session 49).

Found: the knob API (`choose_knobs`), the tuner's fixed knobs and `predict`'s dict of some knobs
refused numpy scalars that they took before (np.int64 tokens, EP or lag, np.int64 minibatch,
np.float32 capacity: `scenario.check_knob` / `check_ep_tokens` / `check_list_lag` ask for
Python types). They are read as the values they hold (`scenario.plain`) and then checked as
before: 1.5, "64", True and np.bool_ are still refused."""

from __future__ import annotations

import numpy as np
import pytest

from mok_kernels import knobs
from mok_kernels.megakernel import KernelConfig
from mok_model.errors import MokInputError
from mok_model.params import load_params
from mok_model.predict import predict
from mok_model.presets import load_hardware, load_model
from mok_model.scenario import Scenario
from mok_model.tuner import tune

KIMI = load_model("kimi-k2")


@pytest.fixture(scope="module")
def table(tmp_path_factory) -> str:
    """A knob table as `mok tune --table` writes it (kimi-k2 EP 8 on h200-1, uniform routing)."""
    path = tmp_path_factory.mktemp("t") / "kimi.json"
    knobs.write_table(path, knobs.build_table("h200-1", "kimi-k2", 8, [256, 1024, 4096],
                                              routing="uniform"))
    return str(path)


def _same(a: knobs.Choice, b: knobs.Choice) -> None:
    assert a.knobs == b.knobs and a.list_lag == b.list_lag and a.source == b.source
    assert a.predicted_ms == b.predicted_ms
    assert all(type(v) in (str, int, float) for v in a.knobs.values()), a.knobs
    assert type(a.list_lag) is int


@pytest.mark.parametrize("ep, tokens, lag", [
    (np.int64(8), 1000, None), (8, np.int64(1000), None), (8, np.int32(1000), None),
    (8, 1000, np.int64(2))])
def test_table_takes_numpy_sizes(table, ep, tokens, lag):
    """A table's bucket for numpy EP / tokens / lag, as for the Python integers (taken before
    session 49; check_ep_tokens / check_list_lag refused them)."""
    want = knobs.choose_knobs(None, KIMI, 8, 1000, table=table, list_lag=None if lag is None
                              else 2)
    _same(knobs.choose_knobs(None, KIMI, ep, tokens, table=table, list_lag=lag), want)


@pytest.mark.parametrize("given, plain", [
    ({"minibatch": np.int64(2048)}, {"minibatch": 2048}),
    ({"comm_sms": np.int32(16), "dispatch": "pull"}, {"comm_sms": 16, "dispatch": "pull"}),
    ({"macrobatch": np.int64(65536), "minibatch": 1024}, {"macrobatch": 65536, "minibatch": 1024}),
    ({"capacity": np.float32(0.5)}, {"capacity": 0.5}),
    ({"capacity": np.float64(1.0), "combine": np.str_("push")}, {"capacity": 1.0, "combine": "push"}),
])
def test_tuner_takes_numpy_given_knobs(given, plain):
    """Given knobs of numpy types: the tuner's answer for the values they hold."""
    _same(knobs.choose_knobs("h200-1", KIMI, 8, 1000, given=given),
          knobs.choose_knobs("h200-1", KIMI, 8, 1000, given=plain))


def test_table_takes_numpy_given_knob(table):
    _same(knobs.choose_knobs(None, KIMI, 8, 1000, table=table, given={"minibatch": np.int64(2048)}),
          knobs.choose_knobs(None, KIMI, 8, 1000, table=table, given={"minibatch": 2048}))


def test_predict_and_tune_take_numpy_fixed_knobs():
    """predict's dict of some knobs and tune's fixed knobs: numpy scalars as their values."""
    scn = Scenario(load_hardware("h200-hgx8"), KIMI, 8, 1024)
    for given, plain in (({"minibatch": np.int64(2048)}, {"minibatch": 2048}),
                         ({"capacity": np.float32(0.5)}, {"capacity": 0.5})):
        a, b = predict(scn, given), predict(scn, plain)
        assert a.latency_ms == b.latency_ms and a.config == b.config
        p = load_params(None, "h200-hgx8")
        assert tune(scn, p, fixed=given).best == tune(scn, p, fixed=plain).best


@pytest.mark.parametrize("given, want", [
    ({"minibatch": 1.5}, "--minibatch 1.5"), ({"minibatch": np.float64(1.5)}, "--minibatch"),
    ({"capacity": True}, "--capacity True"), ({"capacity": np.bool_(True)}, "--capacity"),
    ({"comm_sms": "16"}, "--comm-sms '16'"), ({"dispatch": "both"}, "--dispatch 'both'")])
def test_bad_given_knobs_still_refused(given, want):
    with pytest.raises(MokInputError) as exc:
        knobs.choose_knobs("h200-1", KIMI, 8, 1000, given=given)
    assert want in str(exc.value), str(exc.value)


@pytest.mark.parametrize("ep, tokens, lag", [(True, 1000, None), (8, np.bool_(True), None),
                                             (8, np.float64(1000.0), None), (8, 1000, np.int64(9))])
def test_bad_sizes_still_refused(table, ep, tokens, lag):
    with pytest.raises(MokInputError):
        knobs.choose_knobs(None, KIMI, ep, tokens, table=table, list_lag=lag)


def test_tile_sweep_candidates_validate():
    """Every tile-sweep candidate (and the copy_rows / split_dn / dn_blocks suffixes the device
    scripts use) builds a KernelConfig that validates, as tile_sweep builds it."""
    from mok_kernels.tile_sweep import CANDIDATES, FP8_CANDIDATES, candidate_tiles
    knobs_ = dict(dispatch="pull", combine="push", minibatch=2048, comm_sms=32,
                  macrobatch=131072, capacity=1.0)
    for fp8, table_ in ((False, CANDIDATES), (True, FP8_CANDIDATES)):
        names = list(table_) + ([] if fp8 else [f"{n}-{s}" for n in table_
                                                for s in ("c32", "c64", "k4", "k16", "b2")])
        for name in names:
            KernelConfig(**knobs_, **candidate_tiles(name, table_, fp8),
                         precision="fp8" if fp8 else "bf16", on_error="raise").validate()
