"""Session 49's fuzzing of the less-covered surfaces (the knob API of mok_kernels/knobs.py,
KernelConfig, hand-edited knob tables and run records, `mok validate` / `calibrate` / `study`,
the calibration tools and the environment): each fault found, fixed. A library call refuses bad
input with MokInputError (a ValueError), one line naming the value and the rule; valid input
runs as before."""

from __future__ import annotations

import json

import pytest

from mok_kernels import knobs
from mok_kernels.megakernel import KernelConfig
from mok_model.errors import MokInputError

KIMI = {"hidden": 7168, "expert_width": 2048, "routed_experts": 384, "top_k": 8,
        "shared_width": 2048}


def _one_line(exc: pytest.ExceptionInfo, want: str) -> None:
    assert "\n" not in str(exc.value) and want in str(exc.value), str(exc.value)


@pytest.fixture(scope="module")
def table(tmp_path_factory) -> dict:
    """A knob table as `mok tune --table` writes it (two buckets, kimi-k2 EP 16 on h200-1)."""
    doc = knobs.build_table("h200-1", "kimi-k2", 16, [64, 2048])
    path = tmp_path_factory.mktemp("t") / "kimi.json"
    knobs.write_table(path, doc)
    return json.loads(path.read_text())


def _write(tmp_path, doc: dict) -> str:
    path = tmp_path / "t.json"
    path.write_text(json.dumps(doc))
    return str(path)


# ---------------------------------------------------------------- layer shapes

@pytest.mark.parametrize("key, value", [
    # int() read these as other shapes (1.5 -> 1, True -> 1, "64" -> 64) or raised a bare
    # ValueError / TypeError / OverflowError
    ("hidden", 1.5), ("top_k", True), ("expert_width", "64"), ("routed_experts", float("nan")),
    ("shared_width", float("inf")), ("hidden", None), ("top_k", [8])])
def test_layer_shape_values_are_integers(key, value):
    with pytest.raises(MokInputError) as exc:
        knobs.layer_model({**KIMI, key: value})
    _one_line(exc, f"layer shape {key}={value!r} must be an integer")


def test_layer_shape_not_a_dict():
    with pytest.raises(MokInputError) as exc:
        knobs.layer_model(None)
    _one_line(exc, "a MoEModel or a dict")
    assert knobs.layer_model(dict(KIMI)).name == "kimi-k2"


# ---------------------------------------------------------------- given knobs, EP, tokens, lag

@pytest.mark.parametrize("given, want", [
    # an unknown mode was dropped (the tuner's pick returned in its place), or returned as given
    ({"dispatch": "x"}, "--dispatch 'x' must be one of"),
    ({"combine": ""}, "--combine '' must be one of"),
    ({"minibatch": 1.5}, "--minibatch 1.5 must be an integer >= 1"),    # ran as minibatch 1
    ({"minibatch": True}, "--minibatch True must be an integer >= 1"),
    ({"minibatch": "x"}, "--minibatch 'x' must be an integer >= 1"),    # int('x') ValueError
    ({"capacity": "1"}, "--capacity '1' must be in (0, 1]"),            # ran as capacity 1.0
    ({"capacity": True}, "--capacity True must be in (0, 1]")])
def test_given_knobs_are_checked(given, want):
    with pytest.raises(MokInputError) as exc:
        knobs.choose_knobs("h200-1", KIMI, 16, 2048, given=given)
    _one_line(exc, want)


def test_every_knob_given_is_checked_too():
    bad = {"dispatch": "x", "combine": "y", "minibatch": 0, "comm_sms": 0, "macrobatch": 0,
           "capacity": 0}
    with pytest.raises(MokInputError) as exc:     # was returned as the layer's knobs
        knobs.choose_knobs("h200-1", KIMI, 16, 2048, given=bad)
    _one_line(exc, "--dispatch 'x'")


def test_given_knobs_from_a_table_are_checked(tmp_path, table):
    path = _write(tmp_path, table)
    with pytest.raises(MokInputError) as exc:     # minibatch -4 was returned beside the table's
        knobs.choose_knobs("h200-1", KIMI, 16, 2048, table=path, given={"minibatch": -4})
    _one_line(exc, "--minibatch -4 must be an integer >= 1")


@pytest.mark.parametrize("ep, tokens, want", [
    (True, 2048, "--ep True must be an integer >= 1"),          # TypeError in the routing draw
    (16, True, "--tokens True must be an integer >= 1")])
def test_bool_ep_and_tokens(ep, tokens, want):
    with pytest.raises(MokInputError) as exc:
        knobs.choose_knobs("h200-1", KIMI, ep, tokens)
    _one_line(exc, want)


@pytest.mark.parametrize("tokens", [0, -5, 1.5, True, "64"])
def test_table_tokens_are_checked(tmp_path, table, tokens):
    # a table's bucket was returned for 0, -5, 1.5 and True tokens; "64" was a TypeError
    with pytest.raises(MokInputError) as exc:
        knobs.choose_knobs("h200-1", KIMI, 16, tokens, table=_write(tmp_path, table))
    _one_line(exc, f"--tokens {tokens!r} must be an integer >= 1")


@pytest.mark.parametrize("lag, want", [(0, "list_lag 0 must be an integer >= 1"),
                                       (-1, "list_lag -1 must be an integer >= 1"),
                                       (99, "--list-lag 99 must be at most 8")])
def test_list_lag_is_checked(tmp_path, table, lag, want):
    # a table's choice came back with lag 0, -1 or 99; the tuner ran lag 0 as 1
    with pytest.raises(MokInputError) as exc:
        knobs.choose_knobs("h200-1", KIMI, 16, 2048, table=_write(tmp_path, table), list_lag=lag)
    _one_line(exc, want)
    with pytest.raises(MokInputError):
        knobs.choose_knobs("h200-1", KIMI, 16, 2048, list_lag=lag)


@pytest.mark.parametrize("kw, want", [
    # AttributeError / TypeError from deep inside
    ({"hardware": 5}, "hardware 5: name a preset or a TOML file"),
    ({"routing": 5}, "--routing 5: a routing spec"),
    ({"params": 5}, "--params 5: name a parameters file"),
    ({"given": [1]}, "given knobs [1]: a dict")])
def test_api_arguments_of_the_wrong_type(kw, want):
    args = {"hardware": "h200-1", **kw}
    with pytest.raises(MokInputError) as exc:
        knobs.choose_knobs(args.pop("hardware"), KIMI, 16, 2048, **args)
    _one_line(exc, want)


def test_table_path_of_the_wrong_type():
    with pytest.raises(MokInputError) as exc:
        knobs.load_table(5)
    _one_line(exc, "knob table 5: name a JSON file")


# ---------------------------------------------------------------- hand-edited knob tables

@pytest.mark.parametrize("capacity", [None, "", "x", True])
def test_table_capacity_of_the_wrong_type(tmp_path, table, capacity):
    doc = json.loads(json.dumps(table))
    doc["buckets"][1]["config"]["capacity"] = capacity     # TypeError; True was taken as 1.0
    with pytest.raises(MokInputError) as exc:
        knobs.load_table(_write(tmp_path, doc))
    _one_line(exc, f"bucket 2048: --capacity {capacity!r} must be in (0, 1]")


@pytest.mark.parametrize("ms", [float("inf"), 1e300, 0.0])
def test_table_prediction_is_a_time(tmp_path, table, ms):
    """A bucket's prediction is a pass time in records.LATENCY_MS (inf and 1e300 were returned
    as the layer's prediction)."""
    doc = json.loads(json.dumps(table))
    doc["buckets"][1]["predicted_ms"] = ms
    with pytest.raises(MokInputError) as exc:
        knobs.load_table(_write(tmp_path, doc))
    _one_line(exc, f"predicted_ms={ms!r} must be a time in [0.0001, 1e+06] ms")


def test_json_key_given_twice(tmp_path, table):
    text = json.dumps(table)
    path = tmp_path / "t.json"
    path.write_text(text[:-1] + ', "ep": 8}')             # read as EP 8, the last value
    with pytest.raises(MokInputError) as exc:
        knobs.load_table(path)
    _one_line(exc, "key 'ep' given twice in one object")


def test_run_record_key_given_twice(tmp_path, capsys):
    from mok_model.cli import main
    rec = (pytest.importorskip("pathlib").Path(__file__).parent.parent
           / "calibration/runs/h200/bench_megakernel.jsonl").read_text().splitlines()[0]
    path = tmp_path / "r.jsonl"
    path.write_text(rec[:-1] + ', "ep": 8}\n')            # validated as EP 8 (APE 23%), exit 0
    assert main(["validate", "--params", "mok_model/params/h200-1.json", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "key 'ep' given twice in one object" in err, err


# ---------------------------------------------------------------- KernelConfig

@pytest.mark.parametrize("field, value, want", [
    # TypeError from a comparison, or accepted and failing (or hanging) in the launch
    ("capacity", "1", "capacity='1': a number in (0, 1]"),
    ("capacity", float("inf"), "capacity=inf: a number in (0, 1]"),
    ("capacity", 1.25, "capacity=1.25: a number in (0, 1]"),
    ("capacity", True, "capacity=True: a number in (0, 1]"),
    ("block_m", "64", "block_m='64': an integer from 16"),
    ("bn_gu", float("nan"), "bn_gu=nan: an integer from 16"),
    ("copy_rows", None, "copy_rows=None: an integer from 16"),
    ("minibatch", 10 ** 30, "minibatch=1000000000000000000000000000000: an integer from 1 to"),
    ("num_warps", 0, "num_warps=0: an integer from 1"),
    ("num_stages", "x", "num_stages='x': an integer from 1"),
    ("grid", -1, "grid=-1: an integer from 1"),
    ("max_spin", 1.5, "max_spin=1.5: an integer from 0"),
    ("tma", "yes", "tma='yes': True or False"),
    ("join", None, "join=None: True or False"),
    ("save_for_backward", 2, "save_for_backward=2: True or False")])
def test_kernel_config_fields(field, value, want):
    with pytest.raises(MokInputError) as exc:
        KernelConfig(**{field: value}).validate()
    _one_line(exc, want)


def test_kernel_config_valid_fields_still_pass():
    KernelConfig().validate()
    KernelConfig(capacity=1.0, max_spin=0, grid=132, num_warps=4, minibatch=4096,
                 macrobatch=8192, comm_sms=16).validate()


# ---------------------------------------------------------------- CLIs and tools

BIG = "9" * 30


@pytest.mark.parametrize("module, argv, want", [
    # a 30-digit seed was taken (the other seeds stop at 2^63 - 1, session 48)
    ("mok_model.cli", ["calibrate", "calibration/runs/h200/bench_megakernel.jsonl", "--out",
                       "{d}/p.json", "--band-seed", BIG],
     "--band-seed: 999999999999999999999999999999 must be an integer in [0, 9223372036854775807]"),
    ("mok_model.cli", ["study", "--quick", "--out", "{d}/st", "--seed", BIG, "push-vs-pull"],
     "--seed: 999999999999999999999999999999 must be an integer in [0, 9223372036854775807]"),
    # int() took ' 5' and Arabic-Indic digits; 10^30 questions never ended
    ("mok_model.sim.study", ["--random", BIG], "--random: 999999999999999999999999999999 must be"),
    ("mok_model.sim.study", ["--random", " 5"], "--random: ' 5' must be an integer in [0, 100000]"),
    ("mok_model.sim.study", ["--random", "1", "--seed", "\u0663"], "--seed: '\u0663' must be"),
    ("calibration.heldout_errors", ["calibration/runs/h200/bench_megakernel.jsonl", "--out",
                                    "{d}/h.json", "--sim-every", " 5"],
     "--sim-every: ' 5' must be an integer >= 1"),
    # --terms (and --json) were ignored: the shipped h100-1 files were rewritten, no report
    ("calibration.transfer", ["--write-hopper", "--terms"],
     "--write-hopper writes files and prints no report: drop --terms"),
    # our own runs were scored as published rows at knobs they never ran (theirs ignored)
    ("calibration.gb300_knobs", ["calibration/runs/h200/bench_megakernel.jsonl", "--no-sim"],
     "this report scores published rows, which carry no knobs")])
def test_tool_numbers_and_flags(tmp_path, capsys, module, argv, want):
    import importlib
    main = importlib.import_module(module).main
    assert main([a.replace("{d}", str(tmp_path)) for a in argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and want in err, err


def test_route_cache_dir_with_a_tilde(tmp_path, monkeypatch, capsys):
    """MOK_ROUTE_CACHE_DIR='~/x' (quoted, so no shell expanded it) made a folder named '~' in
    the working folder and cached there."""
    from mok_model.cli import main
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MOK_ROUTE_CACHE_DIR", "~/routes")
    assert main(["presets"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "holds '~', which no shell expanded" in err, err
    assert not (tmp_path / "~").exists()


@pytest.mark.parametrize("blocks", [0, 65, 10 ** 30])
def test_run_record_dn_blocks_in_range(tmp_path, capsys, blocks):
    """A record's tiles.dn_blocks 0 was read as "the layer's choice", 10^30 modelled (exit 0)."""
    from pathlib import Path

    from mok_model.cli import main
    rec = json.loads((Path(__file__).parent.parent / "calibration/runs/h200/bench_megakernel.jsonl")
                     .read_text().splitlines()[0])
    rec["tiles"] = {"dn_blocks": blocks}
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(rec) + "\n")
    assert main(["validate", "--params", "mok_model/params/h200-1.json", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"tiles.dn_blocks={blocks} must be an integer from 1 to 64" in err


@pytest.mark.parametrize("field, value", [("split_dn", 10 ** 30), ("split_dn", 3), ("split_dn", True),
                                          ("dn_blocks", 10 ** 30), ("dn_blocks", 65)])
def test_scenario_tile_options(field, value):
    """Scenario(split_dn=10^30) was an OverflowError in the GEMM table; dn_blocks any integer."""
    from mok_model.presets import load_hardware, load_model
    from mok_model.scenario import Scenario
    with pytest.raises(MokInputError) as exc:
        Scenario(load_hardware("h200-1"), load_model("kimi-k2"), 16, 1024, **{field: value})
    _one_line(exc, f"{field} {value!r} must be")


def test_scenario_and_predict_arguments_of_the_wrong_type():
    """A preset's name for the Hardware, a list for zero_shared_slot and a string for the
    config were AttributeError / TypeError / ValueError from deep inside."""
    from mok_model.predict import predict
    from mok_model.presets import load_hardware, load_model
    from mok_model.scenario import Scenario
    hw, m = load_hardware("h200-1"), load_model("kimi-k2")
    with pytest.raises(MokInputError) as exc:
        Scenario("h200-1", m, 16, 1024)
    _one_line(exc, "a Hardware and a MoEModel")
    with pytest.raises(MokInputError) as exc:
        Scenario(hw, m, 16, 1024, zero_shared_slot=[])
    _one_line(exc, "zero_shared_slot [] must be True or False")
    with pytest.raises(MokInputError) as exc:
        predict(Scenario(hw, m, 16, 1024), "pull")
    _one_line(exc, "config 'pull': a Config, a dict")
