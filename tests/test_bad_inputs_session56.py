"""Session 56 (a helper's fuzzing pass: flag interactions, number spellings at every numeric flag,
knob tables, custom hardware files, output paths, environment variables, study options). Each
test is one fault found: a number in another spelling read as a number, a hardware file's
second-tier fields ignored with one switch tier, and a knob table claiming another engine, seed
or SM count taken as the layer's. CPU only, a few seconds; nothing is written into the
repository."""

from __future__ import annotations

import json

import pytest

from mok_model.cli import main
from mok_model.errors import MokInputError

from cli_errors import one_error

LAYER = ["--hardware", "h200-hgx8", "--model", "qwen3-30b-a3b", "--ep", "8"]
SHAPE = {"hidden": 2048, "expert_width": 768, "routed_experts": 128, "top_k": 8, "shared_width": 0}


# ------------------------------------------------------------------- numbers in other spellings


@pytest.mark.parametrize("flag", ["--ep", "--tokens", "--seed", "--minibatch", "--comm-sms"])
def test_a_digit_separator_is_not_a_number(flag, capsys):
    """int() reads '1_0' as 10: `--ep 1_0` ran EP 10 (and every integer flag likewise)."""
    argv = ["predict", *LAYER, "--tokens", "256"]
    if flag in argv:
        i = argv.index(flag)
        del argv[i:i + 2]
    assert main([*argv, flag, "1_0"]) == 2
    assert "'1_0'" in one_error(capsys.readouterr().err)


@pytest.mark.parametrize("value", [" 0.5", "0.5 ", "٠.٥", "0.5_0"])
def test_capacity_is_a_plain_number(value, capsys):
    """--capacity went through float() alone: ' 0.5', Arabic-Indic digits and '0.5_0' ran as 0.5,
    where every other number flag refuses them."""
    assert main(["predict", *LAYER, "--tokens", "256", "--capacity", value]) == 2
    assert repr(value) in one_error(capsys.readouterr().err)


@pytest.mark.parametrize("value", [" 64,128", "64, 128", "٦٤,128", "64_0", "64,,128", "0,64"])
def test_tokens_buckets_are_plain_integers(value, tmp_path, capsys):
    """`mok tune --table --tokens-buckets` read each bucket with int(): ' 64', '٦٤' and '64_0'
    wrote a table of buckets 64 and 640."""
    out = tmp_path / "t.json"
    assert main(["tune", *LAYER, "--table", str(out), "--tokens-buckets", value]) == 2
    assert "--tokens-buckets" in one_error(capsys.readouterr().err)
    assert not out.exists()


@pytest.mark.parametrize("flag", ["--seed", "--gpus", "--iters", "--warmup", "--rank", "--timeout"])
@pytest.mark.parametrize("value", [" 5", "٥", "1_0"])
def test_bench_integers_are_plain(flag, value, tmp_path, capsys):
    """`mok bench` read --seed, --gpus, --rank, --iters, --warmup and --timeout with int(), so
    ' 5', '٥' and '1_0' passed its checks (only the GPU check stopped them on this machine)."""
    assert main(["bench", "--out", str(tmp_path / "r.jsonl"), flag, value]) == 2
    err = one_error(capsys.readouterr().err, "mok bench")
    assert f"argument {flag}: {value!r}" in err


# ------------------------------------------------------------------------ hardware files


@pytest.mark.parametrize("line, named", [("leaf_gpus = 4", "leaf_gpus=4"),
                                          ("tier_oversubscription = 4.0", "tier_oversubscription=4.0"),
                                          ("tier_latency_us = 5.0", "tier_latency_us=5.0")])
def test_second_tier_fields_need_two_tiers(line, named, tmp_path):
    """A hardware file with switch_tiers = 1 and a leaf size, spine oversubscription or tier
    latency predicted as if they were not there (the network builds a second tier only with
    switch_tiers = 2)."""
    from mok_model.presets import _DIR, load_hardware
    text = (_DIR / "hardware.toml").read_text().split("[h200-hgx8]\n")[1].split("[h200-hgx8.sources]")[0]
    path = tmp_path / "hw.toml"
    path.write_text(text + line + "\n")
    with pytest.raises(MokInputError, match="switch_tiers=1 has none") as exc:
        load_hardware(str(path))
    assert named in str(exc.value) and "\n" not in str(exc.value)
    path.write_text(text)
    load_hardware(str(path))                  # without it: as before
    with pytest.raises(MokInputError, match="tier_latency_us"):
        load_hardware("h200-hgx8").with_(tier_latency_us=0.5)
    load_hardware("rubin-ultra-nvl576").with_(tier_oversubscription=2.0)    # two tiers: allowed


# ------------------------------------------------------------------------------ knob tables


@pytest.fixture(scope="module")
def table(tmp_path_factory) -> dict:
    from mok_kernels.knobs import build_table
    return build_table("h200-hgx8", SHAPE, 8, [64, 256])


@pytest.mark.parametrize("change, named", [
    ({"engine": "sim"}, "engine='sim'"), ({"engine": None}, "engine=None"),
    ({"seed": 3}, "seed=3"), ({"seed": "0"}, "seed='0'"), ({"seed": True}, "seed=True"),
    ({"sms": 10**30}, "sms=1000000000000000000000000000000"), ({"sms": 16385}, "sms=16385"),
    ({"hardware": ""}, "hardware=''"), ({"hardware": "h200-hgx8 "}, "hardware='h200-hgx8 '"),
    ({"hardware": "h200\nhgx8"}, "hardware='h200\\nhgx8'")])
def test_knob_table_claims_are_checked(table, change, named, tmp_path):
    """A knob table saying it was tuned with the simulator or seed 3 (what `mok tune --table`
    refuses to write), for 10^30 SMs, or for a hardware named '' was used as the layer's knobs
    (a layer without hardware takes the table's as named)."""
    from mok_kernels.knobs import choose_knobs
    path = tmp_path / "t.json"
    path.write_text(json.dumps({**table, **change}))
    for hw in ("h200-hgx8", None):
        with pytest.raises(MokInputError) as exc:
            choose_knobs(hw, SHAPE, 8, 100, table=str(path))
        assert named in str(exc.value) and "\n" not in str(exc.value)
    path.write_text(json.dumps(table))
    assert choose_knobs(None, SHAPE, 8, 100, table=str(path)).source.endswith("bucket 256")
    for key in ("engine", "seed"):          # absent (older tables): as before
        path.write_text(json.dumps({k: v for k, v in table.items() if k != key}))
        choose_knobs("h200-hgx8", SHAPE, 8, 64, table=str(path))
