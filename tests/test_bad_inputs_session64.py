"""Session 64's bad inputs: a layer whose expert weights cannot fit one GPU's HBM is refused by
predict, simulate and tune (one line, exit 2) instead of given a latency."""

from __future__ import annotations

import pytest

from mok_model.cli import main
from mok_model.fileio import file_text

HUGE = """name = "huge"
hidden = 16384
expert_width = 16384
routed_experts = 512
top_k = 8
shared_experts = 0
shared_width = 0
layers = 1
moe_layers = 1
source = "a test layer: 512 experts of 16384 x 16384"
"""


@pytest.mark.parametrize("cmd", ["predict", "simulate", "tune"])
def test_weights_that_cannot_fit_are_refused(tmp_path, capsys, cmd):
    model = tmp_path / "huge.toml"
    model.write_text(HUGE)
    args = [cmd, "--hardware", "h200-1", "--model", str(model), "--tokens", "1024"]
    assert main([*args, "--ep", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--ep 1 (huge, bf16): one GPU's expert weights alone need 824.6 GB" in err[0]
    assert "141 GB of h200-1's HBM" in err[0]
    assert main([*args, "--ep", "1", "--precision", "fp8"]) == 2     # 412 GB at 1 byte a weight
    assert "fp8): one GPU's expert weights alone need 412.3 GB" in capsys.readouterr().err
    if cmd == "predict":
        assert main([*args, "--ep", "8"]) == 0                      # 103 GB a GPU: it fits


def test_the_analytic_engine_refuses_degraded_links_in_the_python_api():
    """A Hardware with `degrade` (a simulator what-if) was predicted and tuned as healthy by the
    analytic engine through the Python API (0.21393 ms, as healthy), while the CLI refuses it;
    the simulator still takes it, its unset knobs tuned on healthy links."""
    from mok_model.errors import MokInputError
    from mok_model.params import load_params
    from mok_model.predict import predict
    from mok_model.presets import load_hardware, load_model
    from mok_model.scenario import Config, Scenario
    from mok_model.tuner import tune, tune_robust

    hw, p = load_hardware("h200-hgx8"), load_params(None, "h200-hgx8")
    s = Scenario(hw, load_model("qwen3-30b-a3b"), 8, 512)
    bad = s.with_(hardware=hw.with_(degrade="gpu1:0.1"))
    knobs = Config(minibatch=2048, comm_sms=32, macrobatch=8192, capacity=0.5)
    for call in (lambda: predict(bad, knobs), lambda: predict(bad), lambda: tune(bad, p),
                 lambda: tune_robust(bad, p)):
        with pytest.raises(MokInputError, match="degrade 'gpu1:0.1' is a simulator what-if"):
            call()
    healthy = predict(s, knobs, engine="sim").latency_ms
    assert predict(bad, knobs, engine="sim").latency_ms > 2 * healthy
    auto = predict(bad, engine="sim")               # unset knobs: tuned on healthy links
    assert auto.config == predict(s, engine="sim").config


@pytest.mark.parametrize("kw", [{"search_lag": "yes"}, {"layer_capacity": 1},
                                {"refuse_overflow": None}])
def test_predict_flags_are_booleans(kw):
    from mok_model.errors import MokInputError
    from mok_model.predict import predict
    from mok_model.presets import load_hardware, load_model
    from mok_model.scenario import Scenario

    with pytest.raises(MokInputError, match="must be True or False"):
        predict(Scenario(load_hardware("h200-1"), load_model("kimi-k2"), 8, 1024), **kw)


@pytest.mark.parametrize("n", ["2", 0, -3, True])
def test_sim_candidates_is_a_positive_integer(n):
    from mok_model.errors import MokInputError
    from mok_model.params import load_params
    from mok_model.presets import load_hardware, load_model
    from mok_model.scenario import Scenario
    from mok_model.tuner import tune

    s = Scenario(load_hardware("h200-1"), load_model("kimi-k2"), 8, 1024)
    with pytest.raises(MokInputError, match="sim_candidates"):
        tune(s, load_params(None, "h200-1"), engine="sim", sim_candidates=n)


def test_a_shape_our_kernel_refuses_is_predicted_with_a_note(tmp_path, capsys):
    """On a Hopper preset a shape the megakernel refuses (tiles.shape_refusal) is still the MoK
    design's to predict, but says so; a shape it runs carries no such note."""
    model = tmp_path / "h2000.toml"
    model.write_text('name = "h2000"\nhidden = 2000\nexpert_width = 512\nrouted_experts = 16\n'
                     'top_k = 2\nshared_experts = 0\nshared_width = 0\n')
    args = ["predict", "--hardware", "h200-1", "--ep", "8", "--tokens", "512"]
    assert main([*args, "--model", str(model)]) == 0
    assert "note: our megakernel refuses this shape (hidden size H=2000 is not a multiple of 64" \
        in capsys.readouterr().out
    assert main([*args, "--model", "kimi-k2"]) == 0
    assert "refuses this shape" not in capsys.readouterr().out


def test_validate_with_every_record_skipped_says_why(tmp_path, capsys):
    """`mok validate` on records the model skips (here a non-default backward variant) named
    micro-* and kernel-only systems as the reason; it now gives the skip notes."""
    import json

    line = next(x for x in file_text("calibration/runs/h200_drawn/drawn25.jsonl.gz").splitlines()
                if '"system": "mok"' in x)
    rec = json.loads(line)
    rec["pass"] = "bwd"
    path = tmp_path / "bwd.jsonl"
    path.write_text(json.dumps(rec) + "\n")
    assert main(["validate", "--params", "mok_model/params/h200-1.json", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "no MoE layer records to validate (skipped 1 MoK record of " \
        "non-default kernel variants" in err


def test_a_record_of_another_sm_count_than_its_preset_is_refused(tmp_path, capsys):
    """A run record naming h200-1 with 100 SMs was scored at the preset's 132."""
    import json

    rec = json.loads(next(x for x in file_text("calibration/runs/h200_drawn/drawn25.jsonl.gz").splitlines()
                          if '"system": "mok"' in x))
    rec["hardware"]["sms"] = 100
    path = tmp_path / "sms.jsonl"
    path.write_text(json.dumps(rec) + "\n")
    assert main(["validate", "--params", "mok_model/params/h200-1.json", str(path)]) == 2
    assert "sms.jsonl:1: hardware.sms 100: preset h200-1 has 132 SMs" in capsys.readouterr().err


@pytest.mark.parametrize("change, why", [
    ({"id": "a\nb"}, "must hold no control characters"),
    ({"date": "2099-01-01T00:00:00+00:00"}, "is in the future"),
    ({"date": "2099-01-01T00:00:00"}, "is in the future"),
])
def test_a_record_with_a_broken_id_or_a_future_date_is_refused(tmp_path, capsys, change, why):
    """An id with a line break split the one-line reports; a run dated in the future would meet
    every registration made before that date."""
    import json

    rec = json.loads(next(x for x in file_text("calibration/runs/h200_drawn/drawn25.jsonl.gz").splitlines()
                          if '"system": "mok"' in x))
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps({**rec, **change}) + "\n")
    assert main(["validate", "--params", "mok_model/params/h200-1.json", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and why in err


def test_numpy_scalars_are_read_as_their_values_everywhere():
    """Config, Scenario and choose_knobs took numpy scalars; KernelConfig, tune(top=),
    Hardware.with_ and MoEModel.with_ refused them: now all read them as their values (a numpy
    bool stays a bool, refused where a number is due)."""
    import numpy as np

    from mok_kernels.megakernel import KernelConfig
    from mok_model.errors import MokInputError
    from mok_model.params import load_params
    from mok_model.presets import load_hardware, load_model
    from mok_model.scenario import Scenario
    from mok_model.tuner import tune

    c = KernelConfig(minibatch=np.int64(2048), capacity=np.float32(0.5))
    c.validate()
    assert type(c.minibatch) is int and c.capacity == 0.5
    assert type(load_hardware("h200-1").with_(sms=np.int64(100)).sms) is int
    assert type(load_model("kimi-k2").with_(top_k=np.int64(4)).top_k) is int
    s = Scenario(load_hardware("h200-1"), load_model("kimi-k2"), 8, 1024)
    p = load_params(None, "h200-1")
    assert tune(s, p, top=np.int64(1)).best == tune(s, p, top=1).best
    with pytest.raises(MokInputError, match="sms=True must be a number"):
        load_hardware("h200-1").with_(sms=np.bool_(True))
