"""Session 51's fuzzing pass (custom model / hardware files, the Python API, environment, flag
combinations): each test is one fault found, and failed before its fix. The rule (README
"Contract extensions", docs/bad-input.md): bad input is one line naming the value and the rule,
exit 2 from the CLI or MokInputError (a ValueError) from the API; valid input gets a sensible
answer, never a negative or non-finite number; a value is never silently ignored."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mok_model.cli import main
from mok_model.errors import MokInputError
from mok_model.params import load_params
from mok_model.predict import predict
from mok_model.presets import load_hardware, load_model
from mok_model.scenario import Config, Scenario

REPO = Path(__file__).resolve().parents[1]


def _one_line(rc: int, err: str, want: str) -> None:
    assert rc == 2, (rc, err)
    assert "Traceback" not in err and err.count("\n") == 1, err
    assert err.startswith("mok: error: "), err
    assert want in err, err


def _gb300_body() -> str:
    hw = (REPO / "mok_model/presets/hardware.toml").read_text()
    block = hw[hw.index("[gb300-nvl72]"):hw.index("[gb300-nvl72.sources]")]
    return block.split("\n", 1)[1]


def _no_negative_terms(doc: dict) -> None:
    for group in ("breakdown_ms", "work_ms"):
        for key, value in doc[group].items():
            assert math.isfinite(value) and value >= 0, f"{group}.{key} = {value!r}"


# ---- 1. analytic scale_out term negative where the scale-out link is faster than NVLink ----

def test_scale_out_term_is_never_negative(tmp_path, capsys):
    """A hardware file whose NVLink (50 GB/s, within HARDWARE_MIN) is slower than its scale-out
    link (100 GB/s): `mok predict` at an EP spanning two domains printed `scale_out -0.4026 ms`
    (analytic.mok_terms: scale_out_time(total, one-domain total) is negative when spanning
    domains is faster). The simulator prints 0 there; the analytic engine should too (or the
    file should be refused)."""
    path = tmp_path / "slow-nvlink.toml"
    path.write_text(_gb300_body().replace("link_gbps = 900.0", "link_gbps = 50.0"))
    rc = main(["predict", "--hardware", str(path), "--model", "kimi-k2", "--ep", "144",
               "--tokens", "128", "--params", "mok_model/params/gb300-nvl72.json",
               "--allow-params-mismatch", "--json"])
    out, err = capsys.readouterr()
    if rc == 2:
        _one_line(rc, err, "link")
        return
    assert rc == 0, err
    _no_negative_terms(json.loads(out))


# ---- 2. steady_state a rounding error below 0 where the fill is clamped ----

def test_steady_state_is_never_a_rounding_error_below_zero(tmp_path, capsys):
    """A model file within MODEL_MAX (1,024 shared experts of width 2^21): pipeline_fill is
    clamped to pipe - drain and steady_state = pipe - fill - drain came out -2.9e-12 ms (text:
    `steady_state -0.0000 ms`); analytic.mok_terms. Its 13 TB of shared weights fit only a
    GPU of 10^6 GB HBM (HARDWARE_MAX; session 64 refuses a layer whose weights pass the HBM)."""
    path = tmp_path / "many-shared.toml"
    path.write_text("hidden = 1024\nexpert_width = 512\nrouted_experts = 16\ntop_k = 2\n"
                    "shared_experts = 1024\nshared_width = 2097152\n")
    hw = (REPO / "mok_model/presets/hardware.toml").read_text()
    block = hw[hw.index("[h200-hgx8]"):hw.index("[h200-hgx8.sources]")].split("\n", 1)[1]
    big = tmp_path / "big-hbm.toml"
    big.write_text(block.replace("hbm_gb = 141.0", "hbm_gb = 1000000.0"))
    rc = main(["predict", "--hardware", str(big), "--model", str(path), "--ep", "8",
               "--tokens", "4096", "--params", "mok_model/params/h200-hgx8.json",
               "--allow-params-mismatch", "--json"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    _no_negative_terms(json.loads(out))


# ---- 3. a model / hardware name with a line break makes error lines two lines ----

@pytest.mark.parametrize("name", ["a\\nb", "a\\u001b[31mb"])
def test_a_model_name_with_control_characters(name, tmp_path, capsys):
    """`name = "a\\nb"` in a model file was taken; the EP error then read `... routed experts of
    a<newline>b: ...` (two lines), and the text output's header printed the raw escape
    sequence. A name with control characters should be refused (presets._load / _build), or
    printed escaped."""
    path = tmp_path / "named.toml"
    path.write_text(f'name = "{name}"\nhidden = 1024\nexpert_width = 512\nrouted_experts = 16\n'
                    f'top_k = 2\n')
    rc = main(["predict", "--hardware", "h200-hgx8", "--model", str(path), "--ep", "32",
               "--tokens", "64"])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert err.count("\n") == 1 and "\x1b" not in err, repr(err)


# ---- 4. MoEModel.with_ / Hardware.with_ skip the type checks a TOML file gets ----

MODEL_CHANGES = [dict(hidden=True), dict(expert_width=0.5), dict(top_k=1.5),
                 dict(routed_experts=384.5), dict(shared_experts=2.5), dict(name=None)]


@pytest.mark.parametrize("change", MODEL_CHANGES, ids=[str(c) for c in MODEL_CHANGES])
def test_model_what_if_copy_is_type_checked(change):
    """load_model("kimi-k2").with_(hidden=True) predicted 0.33 ms, expert_width=0.5 0.42 ms,
    shared_experts=2.5 0.68 ms; top_k=1.5 was a TypeError deep in the routing draw
    (presets._validated_model checks ranges, not types: the type checks live in _build only)."""
    with pytest.raises(MokInputError):
        load_model("kimi-k2").with_(**change)


HARDWARE_CHANGES = [dict(hbm_gb=True), dict(link_gbps="900"), dict(degrade=5),
                    dict(sources=None), dict(name=5), dict(emulated_ranks=1)]


@pytest.mark.parametrize("change", HARDWARE_CHANGES, ids=[str(c) for c in HARDWARE_CHANGES])
def test_hardware_what_if_copy_is_type_checked(change):
    """Hardware.with_ (a study's what-if copy, session 30) checked integers and ranges but not
    types: hbm_gb=True, name=5 and emulated_ranks=1 were taken; link_gbps="900" was a TypeError,
    degrade=5 and sources=None AttributeErrors."""
    with pytest.raises(MokInputError):
        load_hardware("gb300-nvl72").with_(**change)


# ---- 5. Scenario takes a bool seed, and seeds the CLI refuses ----

@pytest.mark.parametrize("seed", [True, 2 ** 64])
def test_scenario_seed_is_checked_as_the_cli_checks_it(seed):
    """Scenario(seed=True) predicted as seed 1 (a bool is not a count: session 49's rule for EP
    and tokens), and seed 2^64 ran where `mok predict --seed` takes [0, 2^63 - 1]."""
    with pytest.raises(MokInputError):
        Scenario(load_hardware("gb300-nvl72"), load_model("kimi-k2"), 16, 256, seed=seed)


# ---- 6. predict() ignores MoK knobs given for a baseline ----

@pytest.mark.parametrize("config", [Config(minibatch=256, macrobatch=4096), {"minibatch": 256}])
def test_predict_refuses_knobs_for_a_baseline(config):
    """`mok predict --system deepep --minibatch 256` is refused ("has no MoK knobs; drop
    ['minibatch']"); predict(scn, config, system="deepep") returned deepep's latency with the
    knobs silently ignored (predict.predict)."""
    scn = Scenario(load_hardware("gb300-nvl72"), load_model("kimi-k2"), 16, 256)
    with pytest.raises(MokInputError):
        predict(scn, config, system="deepep")


# ---- 7. tuner.tune's arguments ----

TUNE_BAD = [("top0", dict(top=0)), ("top1.5", dict(top=1.5)), ("top-1", dict(top=-1)),
            ("fixed-list", dict(fixed=[("minibatch", 256)])), ("params-None", dict(params=None))]


@pytest.mark.parametrize("kwargs", [k for _, k in TUNE_BAD], ids=[i for i, _ in TUNE_BAD])
def test_tune_arguments_are_checked(kwargs):
    """tuner.tune(scn, p, top=0): IndexError; top=1.5: TypeError; top=-1 accepted (`mok tune
    --top` takes integers >= 1); fixed as a list: AttributeError; params None: TypeError (and a
    path, which predict takes, is a TypeError too)."""
    from mok_model import tuner

    scn = Scenario(load_hardware("gb300-nvl72"), load_model("kimi-k2"), 16, 256)
    kwargs = dict(kwargs)
    params = kwargs.pop("params", load_params("mok_model/params/gb300-nvl72.json", "gb300-nvl72"))
    try:
        tuner.tune(scn, params, **kwargs)
    except MokInputError:
        return
    except Exception as exc:  # noqa: BLE001 - the fault: any other exception
        pytest.fail(f"{type(exc).__name__}: {exc}")
    pytest.fail(f"tune(**{kwargs}) was accepted")


def test_tune_takes_a_parameters_path_or_refuses_it():
    from mok_model import tuner

    scn = Scenario(load_hardware("gb300-nvl72"), load_model("kimi-k2"), 16, 256)
    try:
        tuner.tune(scn, "mok_model/params/gb300-nvl72.json")
    except MokInputError:
        pass
    except Exception as exc:  # noqa: BLE001
        pytest.fail(f"{type(exc).__name__}: {exc}")


# ---- 8. the knob API drops unknown layer-shape keys ----

def test_layer_shape_with_unknown_keys_is_refused():
    """knobs.layer_model / choose_knobs took {..., "shared_experts": 2} (or a misspelt
    "shared_widht") and silently dropped it: the layer was modelled with one shared expert (or
    none), where a model TOML file refuses an unknown field."""
    from mok_kernels import knobs

    kimi = {"hidden": 7168, "expert_width": 2048, "routed_experts": 384, "top_k": 8,
            "shared_width": 2048}
    for extra in ({"shared_experts": 2}, {"shared_widht": 4096}):
        with pytest.raises(MokInputError):
            knobs.layer_model({**kimi, **extra})


# ---- 9. MOK_ROUTE_CACHE_DIR with a shell variable no shell expanded ----

def test_route_cache_dir_with_an_unexpanded_variable(tmp_path):
    """MOK_ROUTE_CACHE_DIR='$HOME/x' (single-quoted in a script or unit file) made a folder
    literally named '$HOME' in the working folder and cached there, exit 0; session 49 refuses
    '~/x' for the same reason (route_cache.check_env)."""
    env = dict(os.environ, PYTHONPATH=str(REPO), MOK_ROUTE_CACHE_DIR="$HOME/x", MOK_PROGRESS="0")
    p = subprocess.run([sys.executable, "-m", "mok_model.cli", "predict", "--hardware",
                        "gb300-nvl72", "--model", "kimi-k2", "--ep", "16", "--tokens", "4096"],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert not (tmp_path / "$HOME").exists(), "made a folder named '$HOME'"
    assert p.returncode == 2 and p.stderr.count("\n") == 1, p.stderr


# ---- 10. predict / simulate blame a --capacity the user never gave ----

@pytest.mark.parametrize("cmd", ["predict", "simulate"])
def test_memory_refusal_names_no_flag_the_user_did_not_give(cmd, capsys):
    """With no knob given, `mok tune` says "every knob setting: MoK's buffers need at least
    270 GB ..."; `mok predict` / `simulate` said "--capacity 0.125: MoK's buffers ..." though no
    --capacity was given (the tuner's pick, named as a flag)."""
    rc = main([cmd, "--hardware", "gb300-nvl72", "--model", "kimi-k2", "--ep", "16",
               "--tokens", "1048576"])
    err = capsys.readouterr().err
    _one_line(rc, err, "MoK's buffers need")
    assert "--capacity 0.125" not in err, err


# ---- 11. one target under two names ----

def test_a_degrade_target_with_leading_zeros_is_the_same_target():
    """`--degrade gpu0:0.5,gpu00:0.5` was taken as two targets (both degrading gpu0); a target's
    numbers are read as numbers now, so it is refused as a target named twice."""
    from mok_model.sim.network import parse_degrade

    assert parse_degrade("gpu03:0.5") == [("gpu3", 0.5)]
    with pytest.raises(MokInputError, match="names gpu0 twice"):
        parse_degrade("gpu0:0.5,gpu00:0.5")


# ---- 12. numpy scalars: the same values everywhere ----

def test_numpy_scalars_are_the_values_they_hold_in_scenario_and_config():
    """`Scenario(ep=np.int64(16))`, `tokens=np.int32`, `seed=np.int64` and
    `Config(minibatch=np.int64(2048))` were refused while a dict of knobs took them (session
    49: a numpy scalar is the value it holds); np.bool_ stays a bool, refused as one."""
    import numpy as np

    hw, m = load_hardware("gb300-nvl72"), load_model("kimi-k2")
    scn = Scenario(hw, m, np.int64(16), np.int32(256), seed=np.int64(3))
    assert (scn.ep, scn.tokens, scn.seed) == (16, 256, 3) and type(scn.ep) is int
    assert scn == Scenario(hw, m, 16, 256, seed=3)
    assert Config(minibatch=np.int64(2048), capacity=np.float32(0.5)) == Config(minibatch=2048,
                                                                                 capacity=0.5)
    with pytest.raises(MokInputError):
        Scenario(hw, m, np.bool_(True), 256)
