"""`--source-order` (session 47): the what-if schedule whose sources of an expert start after each
GPU (parameter source_order_rotated, docs/sim-study.md "N"), from the command line."""

from __future__ import annotations

import json

import pytest

from mok_model.cli import main

from test_bad_inputs_session30 import _one_line

WORKLOAD = ["--hardware", "gb300-nvl72", "--model", "mixtral-8x7b", "--ep", "8", "--tokens", "4096"]


def _predict(capsys, *extra) -> dict:
    assert main(["predict", *WORKLOAD, "--json", *extra]) == 0
    return json.loads(capsys.readouterr().out)


def test_rotated_sources_move_the_fill_and_say_so(capsys):
    """mixtral-8x7b at EP 8 has one expert per GPU: with rank order every GPU's minibatch 0 reads
    the first sources at once (the fill's source hotspot: 0.081 ms); rotated, each reads its own
    (0.013 ms). The same knobs, both orders; the file's own order is rank."""
    knobs = ["--dispatch", "pull", "--combine", "push", "--minibatch", "1024", "--comm-sms", "32"]
    rank, rotated, shipped = (_predict(capsys, *knobs, *o) for o in
                              (["--source-order", "rank"], ["--source-order", "rotated"], []))
    assert shipped["latency_ms"] == rank["latency_ms"]
    assert rotated["breakdown_ms"]["pipeline_fill"] < 0.5 * rank["breakdown_ms"]["pipeline_fill"]
    assert any("--source-order rotated: a what-if" in n for n in rotated["notes"])
    # a design value the fit did not free: the fit's band still applies
    assert rotated["band_ms"] is not None and rotated["params"] == shipped["params"]
    assert not any(n.startswith("--source-order") for n in shipped["notes"])


def test_a_source_order_is_rank_or_rotated(capsys):
    rc = main(["predict", *WORKLOAD, "--source-order", "sideways"])
    _one_line(rc, capsys.readouterr().err, "mok: ", "--source-order 'sideways' must be one of rank, rotated")


def test_a_knob_table_is_for_the_kernel_as_it_runs(tmp_path, capsys):
    rc = main(["tune", "--hardware", "gb300-nvl72", "--model", "mixtral-8x7b", "--ep", "8",
               "--table", str(tmp_path / "t.json"), "--source-order", "rotated"])
    _one_line(rc, capsys.readouterr().err, "mok: ", "--source-order rotated is a what-if of the schedule")
    assert not (tmp_path / "t.json").exists()


def test_the_analytic_engine_says_where_source_slices_may_recur(capsys):
    """deepseek-v3 at EP 64 on GB300 (4 experts per GPU, 4,096 tokens, the tuner's knobs): the
    busiest source of every GPU's minibatch 0 sends 2.7x what a GPU's minibatch receives, which the
    analytic engine charges in the fill only (the simulator reads the pass 34 % longer; rotated,
    within 1.2 %): a note says to check the simulator. None with the what-if, and none where
    peers are emulated (no links)."""
    ds = ["--model", "deepseek-v3", "--ep", "64", "--tokens", "4096", "--json"]

    def notes(*argv) -> list[str]:
        assert main(["predict", *argv]) == 0
        return [n for n in json.loads(capsys.readouterr().out)["notes"] if "same sources" in n]

    assert len(notes("--hardware", "gb300-nvl72", *ds)) == 1
    assert not notes("--hardware", "gb300-nvl72", *ds, "--source-order", "rotated")
    assert not notes("--hardware", "h200-1", *ds)


def test_register_predicts_a_rotated_run_with_its_design(tmp_path):
    """`python -m calibration.register --source-order rank,rotated` (session 48): the rotated
    configuration names its order in tiles, as `mok bench --source-order` records it, and is
    predicted with source_order_rotated = 1 (the same as `mok predict --source-order rotated`);
    calibration.registered tells the two runs apart."""
    from calibration.register import main as register
    from calibration.registered import _run_key
    from mok_model.params import read_params
    from mok_model.predict import predict
    from mok_model.records import record_config, record_scenario

    out = tmp_path / "reg.jsonl"
    assert register(["--gpus", "8", "--hardware", "gb300-nvl72", "--model", "mixtral-8x7b",
                     "--tokens", "4096", "--minibatch", "1024", "--source-order", "rank,rotated",
                     "--sim-every", "1000", "--out", str(out)]) == 0
    rows = [json.loads(line) for line in out.open()]
    mok = [r for r in rows if r["system"] == "mok" and r["engine"] == "analytic"]
    assert [r.get("tiles") for r in mok] == [None, {"source_order": "rotated"}]
    p = read_params("mok_model/params/gb300-nvl72.json")
    for r, rotated in zip(mok, (0.0, 1.0)):
        rec = r | {"system": "mok", "hardware": {"preset": "gb300-nvl72"}}
        want = predict(record_scenario(rec), record_config(rec), "mok",
                       p.with_design(source_order_rotated=rotated))
        assert r["predicted_ms"] == want.latency_ms
    assert mok[1]["predicted_ms"] < mok[0]["predicted_ms"]     # the fill's source hotspot
    assert _run_key(mok[0]) != _run_key(mok[1])


def test_records_name_a_rotated_order_and_fits_leave_it_out():
    """A record's tiles.source_order: a string, rank or rotated; a rotated forward is a kernel
    variant of its own (split_default_variant names it), predicted with its design."""
    import pytest

    from mok_model.errors import MokInputError
    from mok_model.records import (record_design, split_default_variant, validate_record)

    rec = {"schema": "mok-run/1", "id": "t", "date": "2026-12-05T00:00:00+00:00",
           "source": "measured", "system": "mok", "model": "kimi-k2", "ep": 16, "tokens": 1024,
           "pass": "fwd", "precision": "bf16", "routing": {"kind": "uniform", "seed": 0},
           "config": {"dispatch": "pull", "combine": "push", "minibatch": 4096, "comm_sms": 32,
                      "macrobatch": 131072, "capacity": 0.5},
           "hardware": {"preset": "h200-1", "gpu": "NVIDIA H200", "gpus": 1, "sms": 132,
                        "fabric": "local-hbm", "driver": "cuda 13.0"},
           "software": {"commit": "x", "torch": "x", "triton": "x"}, "emulated_peers": True,
           "latency_ms": {"median": 1.0, "p10": 1.0, "p90": 1.0, "n": 1}, "breakdown_ms": {},
           "note": "", "tiles": {"source_order": "rotated"}}
    validate_record(rec)
    assert record_design(rec) == {"source_order_rotated": 1.0}
    kept, note = split_default_variant([rec])
    assert kept == [] and "1 forward with source order rotated" in note
    for bad, why in (({"source_order": "sideways"}, "must be one of rank, rotated"),
                     ({"source_order": 1}, "must be a string")):
        with pytest.raises(MokInputError, match=why):
            validate_record(rec | {"tiles": bad})


@pytest.mark.parametrize("rec,which", [
    ({"pass": "bwd", "precision": "bf16", "tiles": {"source_order": "rotated"}}, "--pass bwd"),
    ({"pass": "fwd", "precision": "fp8", "tiles": {"source_order": "rotated", "fp8_kernel": "gluon"}},
     "--fp8-kernel gluon")])
def test_one_rule_for_where_the_rotated_order_runs(rec, which):
    """mok predict / simulate / tune, mok bench and a registration plan's tiles refuse a rotated
    order where no schedule of ours takes it by one rule (scenario.check_source_order)."""
    from calibration.register import _check_plan_tiles
    from mok_model.errors import MokInputError

    with pytest.raises(MokInputError, match=f"tiles.source_order rotated with {which}: that "
                                            f"kernel's schedule is in rank order"):
        _check_plan_tiles(rec)
