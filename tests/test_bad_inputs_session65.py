"""Session 65's bad-input fixes: run records that would be scored as another run."""

import dataclasses

import pytest

from mok_model.errors import MokInputError
from mok_model.records import TILE_KEYS, validate_record


def _rec(**over):
    rec = {"schema": "mok-run/1", "id": "r0", "date": "2026-12-01T03:00:00+00:00",
           "system": "mok", "model": "qwen3-30b-a3b", "ep": 8,
           "hardware": {"preset": "h200-1", "gpus": 1, "sms": 132}, "software": {},
           "emulated_peers": True, "tokens": 1024, "routing": {"kind": "uniform", "seed": 0},
           "pass": "fwd", "precision": "bf16", "source": "measured", "note": "",
           "latency_ms": {"median": 1.0}, "tiles": {"block_m": 128, "dn_blocks": 2},
           "config": {"dispatch": "pull", "combine": "push", "minibatch": 4096, "comm_sms": 32,
                      "macrobatch": 131072, "capacity": 1.0}}
    return rec | over


def test_a_well_formed_record_passes():
    validate_record(_rec())
    validate_record(_rec(ep=2, emulated_peers=False, hardware={"preset": "h200-hgx8", "gpus": 2}))


def test_a_misspelled_tile_option_is_refused():
    with pytest.raises(MokInputError, match=r"tiles.dn_block=2 is not a tile option"):
        validate_record(_rec(tiles={"dn_block": 2}))


def test_a_misspelled_knob_is_refused_in_a_layer_run_only():
    with pytest.raises(MokInputError, match=r"config.minibtach is not a knob"):
        validate_record(_rec(config={"dispatch": "pull", "minibtach": 512}))
    # microbenchmarks name their own settings
    validate_record(_rec(system="micro-nvlink-copy", tiles={}, config={"programs": 4, "rows": 64}))


@pytest.mark.parametrize("emulated, ep, gpus", [(False, 8, 1), (True, 2, 2), (True, 1, 1)])
def test_emulated_peers_must_match_ep_and_gpus(emulated, ep, gpus):
    with pytest.raises(MokInputError, match=r"peers are emulated exactly when ep > gpus"):
        validate_record(_rec(emulated_peers=emulated, ep=ep,
                             hardware={"preset": "h200-hgx8", "gpus": gpus}))


def test_a_published_run_is_not_emulated():
    with pytest.raises(MokInputError, match=r"published runs are on real GPUs"):
        validate_record(_rec(source="published", hardware={"preset": "gb300-nvl72"}))


def test_every_backward_tile_field_is_a_known_tile_option():
    from mok_kernels.backward import BackwardTiles
    assert {f.name for f in dataclasses.fields(BackwardTiles)} <= TILE_KEYS


def test_a_layer_takes_other_hardwares_parameters_only_when_told():
    """The refusal's hint names MoKLayer's and choose_knobs' switch; both exist and work, and a
    kept answer of an allowed call is not served to a call without the switch."""
    from mok_kernels import knobs
    from mok_kernels.megakernel import KernelConfig
    from tests.test_knobs import SYN5, _fake_layer
    other = "mok_model/params/h200-1.json"
    with pytest.raises(MokInputError, match=r"MoKLayer and knobs.choose_knobs: "
                                            r"allow_params_mismatch=True"):
        knobs.choose_knobs("h100-1", SYN5, 4, 2304, params=other)
    c = knobs.choose_knobs("h100-1", SYN5, 4, 2304, params=other, allow_params_mismatch=True)
    assert c.source.startswith("tuner: h100-1 params") and c.predicted_ms > 0
    with pytest.raises(MokInputError, match=r"fitted for hardware 'h200-1'"):
        knobs.choose_knobs("h100-1", SYN5, 4, 2304, params=other)
    layer = _fake_layer(KernelConfig(), hardware="h100-1", knob_params=other)
    with pytest.raises(MokInputError, match=r"fitted for hardware 'h200-1'"):
        knobs.resolve_layer(layer)
    layer.allow_params_mismatch = True
    assert knobs.resolve_layer(layer)[0].knobs() == c.knobs


@pytest.mark.parametrize("field, meant", [("tile", "tiles"), ("Tiles", "tiles"),
                                          ("routings", "routing"), ("rank_ms2", "rank_ms")])
def test_a_near_miss_of_a_record_field_is_refused(field, meant):
    rec = _rec()
    rec[field] = rec.pop(meant, {"block_m": 64})
    with pytest.raises(MokInputError, match=rf"field {field!r} is not a run-record field; "
                                            rf"{meant!r} is"):
        validate_record(rec)


def test_other_extra_fields_are_kept_unread():
    validate_record(_rec(comment="rerun after a driver update", commit="abc"))
