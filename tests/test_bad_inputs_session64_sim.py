"""Session 64 (a helper's fuzzing of `mok simulate`): `--degrade` on the presets that emulate
their peers on one GPU, its FACTOR's spelling, and the simulator's guard against runs that would
take minutes. Each test is one fault found; CPU only, a few seconds each."""

from __future__ import annotations

import pytest

from cli_errors import one_error
from mok_model.cli import main
from mok_model.errors import MokInputError
from mok_model.presets import load_hardware
from mok_model.sim.network import parse_degrade

EMULATED = ["--model", "kimi-k2", "--ep", "8", "--tokens", "256"]


# ---- 1. --degrade on a preset whose peers are emulated in one GPU's memory ----

@pytest.mark.parametrize("argv", [
    ["--hardware", "h200-1", "--degrade", "gpu7:0.000001"],
    ["--hardware", "h100-1", "--degrade", "gpu0:0.5"],
    ["--hardware", "h200-1", "--degrade", "gpu3:0.1", "--system", "deepep"],
])
def test_degrade_on_emulated_peers_is_refused(argv, capsys):
    """`mok simulate --hardware h200-1 ... --degrade gpu7:0.000001` printed the healthy answer,
    exit 0 (the emulated pass has no links: only gpu0's, its local copies, changed anything)."""
    rc = main(["simulate", *EMULATED, *argv])
    out, err = capsys.readouterr()
    assert rc == 2 and out == ""
    line = one_error(err)
    assert f"--degrade '{argv[3]}': {argv[1]} emulates its peers in one GPU's memory; there are " \
           f"no links to degrade; use a multi-GPU preset" in line


def test_a_degrade_on_emulated_hardware_is_refused_in_a_file_too():
    """A hardware file (or what-if copy) with emulated_ranks and degrade: the same refusal."""
    with pytest.raises(MokInputError, match="emulates its peers in one GPU's memory"):
        load_hardware("h200-1").with_(degrade="gpu3:0.5")
    assert load_hardware("h200-hgx8").with_(degrade="gpu3:0.5").degrade == "gpu3:0.5"


# ---- 2. --degrade FACTOR read by float() alone ----

@pytest.mark.parametrize("spec", ["gpu3:0.5_0", "gpu3:\u0660.\u0665", "gpu3: 0.5", "gpu3:0.5\u00a0",
                                  "gpu3:\uff10.5", "gpu3:0.5 ", "gpu3:0.5,\ttier:0.5"])
def test_degrade_factor_is_a_plain_number(spec, capsys):
    """'gpu3:0.5_0', Arabic-Indic digits and 'gpu3: 0.5' ran as 0.5 (Python's float() reads
    them), and the spec's elements were stripped of any white space (a no-break space too); a
    FACTOR is a plain ASCII number, as every number the CLI takes (cli.plain_number)."""
    with pytest.raises(MokInputError, match="a plain number"):
        parse_degrade(spec)
    rc = main(["simulate", "--hardware", "h200-hgx8", *EMULATED, "--degrade", spec])
    out, err = capsys.readouterr()
    assert rc == 2 and out == ""
    assert f"--degrade {spec.split(',')[-1]!r}: --degrade takes TARGET:FACTOR" in one_error(err)


@pytest.mark.parametrize("spec, want", [("gpu3:0.5", 0.5), ("gpu3:5e-1", 0.5), ("gpu3:.5", 0.5),
                                        ("gpu3:1e-6", 1e-6), ("gpu3:0", 0.0)])
def test_degrade_factor_plain_spellings_still_read(spec, want):
    assert parse_degrade(spec) == [("gpu3", want)]


# ---- 3. the simulator's guard against a run of minutes ----

def _scenario(ep: int, tokens: int, hw=None, model=None):
    from mok_model.presets import load_model
    from mok_model.scenario import Scenario

    return Scenario(hw or load_hardware("gb300-nvl72"), model or load_model("kimi-k2"), ep, tokens)


@pytest.fixture
def no_simulation(monkeypatch):
    """A simulation that starts fails the test at once (it would run for minutes)."""
    from mok_model.sim import engine

    def started(*a, **k):
        raise AssertionError("the simulation started")
    monkeypatch.setattr(engine, "MokSim", started)


@pytest.mark.parametrize("argv, want", [
    (["--ep", "384", "--tokens", "16384", "--minibatch", "256"],
     "--ep 384 --tokens 16384 --minibatch 256: the simulation would take over ten minutes (the "
     "work of about 9.4 million flows across 6 domains, at most 6 million); lower --tokens or "
     "--ep, or use --engine analytic (mok predict)"),
    (["--ep", "384", "--tokens", "16384"], "the simulation would take over ten minutes"),
])
def test_a_simulation_of_minutes_is_refused_up_front(argv, want, no_simulation, capsys):
    """`mok simulate --hardware gb300-nvl72 --model kimi-k2 --ep 384 --tokens 4096 --minibatch
    256` ran about 4 minutes (over 5 here): it walks 128 minibatches, far below the guard's 4,096,
    which assumed about 5 ms a minibatch at any EP. Four times its tokens would take far longer:
    refused up front (runs of a few minutes, such as that one, stay allowed)."""
    rc = main(["simulate", "--hardware", "gb300-nvl72", "--model", "kimi-k2", *argv])
    out, err = capsys.readouterr()
    assert rc == 2 and out == ""
    assert want in one_error(err)


@pytest.mark.parametrize("ep, tokens, minibatch", [(384, 1024, 4096), (384, 1024, 64), (64, 16384, 4096),
                                                    (128, 2048, 256), (8, 16384, 256),
                                                    (384, 4096, 256)])
def test_a_simulation_of_seconds_is_still_taken(ep, tokens, minibatch):
    """Runs of a few minutes or less here (session 64) stay allowed: the guard only adds the work
    check."""
    import numpy as np

    from mok_model.analytic import loads
    from mok_model.scenario import Config
    from mok_model.sim.engine import MAX_SIM_WORK, check_work, sim_work

    s = _scenario(ep, tokens)
    rows = float(np.max(loads(s).rows))
    check_work(s, Config(minibatch=minibatch), rows)
    assert sim_work(s, int(np.ceil(rows / minibatch)), rows) <= MAX_SIM_WORK


def test_the_largest_benchmarked_simulation_is_still_taken():
    """benchmarks/bench_sim.py's EP 1024 (a GB300 what-if domain of 1,024 GPUs, 2,048 experts,
    2,048 tokens: 25 s here) and rubin-ultra-nvl576's EP 576 (12 s) are allowed."""
    import numpy as np

    from mok_model.analytic import loads
    from mok_model.presets import load_model
    from mok_model.scenario import default_config
    from mok_model.sim.engine import check_work

    kimi = load_model("kimi-k2")
    for hw, experts, ep in [(load_hardware("gb300-nvl72").with_(domain_size=1024), 2048, 1024),
                            (load_hardware("rubin-ultra-nvl576"), 1152, 576)]:
        s = _scenario(ep, 2048, hw, kimi.with_(routed_experts=experts))
        check_work(s, default_config(s), float(np.max(loads(s).rows)))
